package store

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Model is one entry of the registry (folio.db), keyed by Name.
type Model struct {
	Name          string
	Digest        string // of the weights file, "sha256:<hex>"
	Path          string // of the weights file
	Size          int64  // bytes
	Format        string // "gguf"
	Family        string
	ParameterSize string
	Quantization  string
	Template      string
	Parameters    string
	Created       time.Time
	Modified      time.Time
}

const modelColumns = "name, digest, path, size, format, family, parameter_size, quantization, template, parameters, created, modified"

// PutModel inserts m, or replaces the model of the same name. A zero
// Modified is now; a zero Created is now for a new name and unchanged for
// an existing one.
func (s *Registry) PutModel(m Model) error {
	if m.Name == "" {
		return errors.New("store: model has no name")
	}
	now := s.now()
	keepCreated := m.Created.IsZero()
	if keepCreated {
		m.Created = now
	}
	if m.Modified.IsZero() {
		m.Modified = now
	}
	_, err := s.db.Exec(`INSERT INTO models (`+modelColumns+`)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
		ON CONFLICT (name) DO UPDATE SET
			digest = ?2, path = ?3, size = ?4, format = ?5, family = ?6,
			parameter_size = ?7, quantization = ?8, template = ?9, parameters = ?10,
			created = CASE WHEN ?13 THEN created ELSE ?11 END, modified = ?12`,
		m.Name, m.Digest, m.Path, m.Size, m.Format, m.Family, m.ParameterSize,
		m.Quantization, m.Template, m.Parameters, m.Created.UnixNano(), m.Modified.UnixNano(), keepCreated)
	if isFull(err) {
		return fmt.Errorf("store: put model %q: the disk holding %s is full: free disk space and try again: %w", m.Name, s.home, err)
	}
	if err != nil {
		return fmt.Errorf("store: put model %q: %w", m.Name, err)
	}
	return nil
}

// Model returns the model called name, or an error wrapping ErrNotFound.
func (s *Registry) Model(name string) (Model, error) {
	m, err := scanModel(s.db.QueryRow("SELECT "+modelColumns+" FROM models WHERE name = ?", name))
	if errors.Is(err, sql.ErrNoRows) {
		return Model{}, fmt.Errorf("%w: model %q", ErrNotFound, name)
	}
	if err != nil {
		return Model{}, fmt.Errorf("store: model %q: %w", name, err)
	}
	return m, nil
}

// Models returns every model, by name.
func (s *Registry) Models() ([]Model, error) {
	rows, err := s.db.Query("SELECT " + modelColumns + " FROM models ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("store: list models: %w", err)
	}
	defer rows.Close()
	var ms []Model
	for rows.Next() {
		m, err := scanModel(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list models: %w", err)
		}
		ms = append(ms, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list models: %w", err)
	}
	return ms, nil
}

// DeleteModel removes the model called name (its files stay), or returns
// an error wrapping ErrNotFound.
func (s *Registry) DeleteModel(name string) error {
	r, err := s.db.Exec("DELETE FROM models WHERE name = ?", name)
	if err != nil {
		return fmt.Errorf("store: delete model %q: %w", name, err)
	}
	if n, _ := r.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: model %q", ErrNotFound, name)
	}
	return nil
}

// CopyModel registers dst as a copy of src (same weights file), replacing
// any model called dst; Created and Modified of dst are now.
func (s *Registry) CopyModel(src, dst string) error {
	if dst == "" {
		return errors.New("store: copy model: no destination name")
	}
	now := s.now().UnixNano()
	r, err := s.db.Exec(`INSERT INTO models (`+modelColumns+`)
		SELECT ?1, digest, path, size, format, family, parameter_size, quantization, template, parameters, ?2, ?2
		FROM models WHERE name = ?3
		ON CONFLICT (name) DO UPDATE SET
			digest = excluded.digest, path = excluded.path, size = excluded.size,
			format = excluded.format, family = excluded.family,
			parameter_size = excluded.parameter_size, quantization = excluded.quantization,
			template = excluded.template, parameters = excluded.parameters,
			created = excluded.created, modified = excluded.modified`, dst, now, src)
	if err != nil {
		return fmt.Errorf("store: copy model %q to %q: %w", src, dst, err)
	}
	if n, _ := r.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: model %q", ErrNotFound, src)
	}
	return nil
}

type scanner interface{ Scan(...any) error }

func scanModel(r scanner) (Model, error) {
	var (
		m                 Model
		created, modified int64
	)
	err := r.Scan(&m.Name, &m.Digest, &m.Path, &m.Size, &m.Format, &m.Family, &m.ParameterSize,
		&m.Quantization, &m.Template, &m.Parameters, &created, &modified)
	m.Created, m.Modified = time.Unix(0, created), time.Unix(0, modified)
	return m, err
}

// Blob is a content-addressed file the registry knows, keyed by Digest.
type Blob struct {
	Digest  string
	Path    string
	Size    int64
	Created time.Time
}

// PutBlob inserts b or replaces the blob of the same digest; a zero
// Created is now.
func (s *Registry) PutBlob(b Blob) error {
	if b.Digest == "" {
		return errors.New("store: blob has no digest")
	}
	if b.Created.IsZero() {
		b.Created = s.now()
	}
	_, err := s.db.Exec(`INSERT INTO blobs (digest, path, size, created) VALUES (?1, ?2, ?3, ?4)
		ON CONFLICT (digest) DO UPDATE SET path = ?2, size = ?3, created = ?4`,
		b.Digest, b.Path, b.Size, b.Created.UnixNano())
	if err != nil {
		return fmt.Errorf("store: put blob %s: %w", b.Digest, err)
	}
	return nil
}

// Blob returns the blob of digest, or an error wrapping ErrNotFound.
func (s *Registry) Blob(digest string) (Blob, error) {
	b, err := scanBlob(s.db.QueryRow("SELECT digest, path, size, created FROM blobs WHERE digest = ?", digest))
	if errors.Is(err, sql.ErrNoRows) {
		return Blob{}, fmt.Errorf("%w: blob %s", ErrNotFound, digest)
	}
	if err != nil {
		return Blob{}, fmt.Errorf("store: blob %s: %w", digest, err)
	}
	return b, nil
}

// Blobs returns every blob, by digest.
func (s *Registry) Blobs() ([]Blob, error) {
	rows, err := s.db.Query("SELECT digest, path, size, created FROM blobs ORDER BY digest")
	if err != nil {
		return nil, fmt.Errorf("store: list blobs: %w", err)
	}
	defer rows.Close()
	var bs []Blob
	for rows.Next() {
		b, err := scanBlob(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list blobs: %w", err)
		}
		bs = append(bs, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list blobs: %w", err)
	}
	return bs, nil
}

// DeleteBlob forgets the blob of digest (the file stays), or returns an
// error wrapping ErrNotFound.
func (s *Registry) DeleteBlob(digest string) error {
	r, err := s.db.Exec("DELETE FROM blobs WHERE digest = ?", digest)
	if err != nil {
		return fmt.Errorf("store: delete blob %s: %w", digest, err)
	}
	if n, _ := r.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: blob %s", ErrNotFound, digest)
	}
	return nil
}

func scanBlob(r scanner) (Blob, error) {
	var (
		b       Blob
		created int64
	)
	err := r.Scan(&b.Digest, &b.Path, &b.Size, &created)
	b.Created = time.Unix(0, created)
	return b, err
}
