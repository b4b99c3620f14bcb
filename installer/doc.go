// Package installer puts models into folio's home directory: Pull fetches
// them from an Ollama registry, a Hugging Face repository or a plain URL;
// Create makes them from a GGUF file, an uploaded blob or another model
// (a Modelfile, or /api/create's JSON). Both enter the result in the
// registry (store/), which list, show, rm and cp read. Push sends a
// registered model to an Ollama registry: the blobs it lacks, streamed
// from disk, then the manifest.
//
// # On disk
//
// Under home (FOLIO_HOME), as Ollama lays it out:
//
//	blobs/sha256-<hex>               a verified blob, 0600, named by its digest
//	blobs/<key>-partial              a download in progress (key: the hex, or url-<hash>)
//	blobs/<key>-partial.json         its resume record: the byte ranges and how much of each is written
//	blobs/.lock                      shared by pulls and creates, exclusive for a prune
//	manifests/<host>/<ns>/<model>/<tag>  the model's manifest (JSON), its layers by digest
//
// A blob enters blobs/sha256-<hex> only by a rename after its sha256 has
// been checked, and a model enters the registry only after all its blobs
// have. Digests and names are checked (CheckDigest, ParseName) before any
// path is built from them, so a manifest cannot name a file outside home.
//
// # Downloads
//
// A blob is split into ranges of about Options.MinPartSize (64 MiB; at
// most 1024 ranges), which Options.Parts (4) workers fetch in order. A
// range that fails or stalls (Options.StallTimeout without a byte) is
// asked again from where it stopped, after an exponential backoff that
// resets once it makes progress. The resume record is a snapshot of the
// ranges taken before the partial file is synced and written after it,
// so it never claims bytes that are not on disk: a pull killed at any
// point resumes without fetching again what the record holds. A server
// that ignores byte ranges gets one stream, restarted from zero on
// failure.
//
// The sha256 is computed while the ranges arrive: a hasher reads the
// file's written prefix in order (ranges are taken in order, so the prefix
// keeps growing), and the check at the end reads only the rest. A resumed
// download is hashed from the start of the file.
//
// # Concurrency
//
// Pulls of the same blob in one process share one download (flights);
// each pull reads its counters for progress, and the download stops when
// the last pull waiting for it gives up. Between processes, a flock on the
// partial file makes the second wait for the first, then find the blob
// done. Prune runs only when it can lock blobs/.lock exclusively, so never
// while a pull or create, here or in another process, holds it shared.
package installer
