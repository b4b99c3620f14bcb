// Package store keeps folio's durable state in SQLite: the model registry,
// blobs, sessions and persisted prefix KV blocks. It is the only importer of
// the SQLite driver. Arrives with the store issue.
package store
