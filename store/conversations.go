package store

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Conversation is a chat kept in folio.db: its settings and, through
// Messages, its turns. The server renders it with the model's template at
// each reply; the store keeps text, never tokens.
type Conversation struct {
	ID      string
	Title   string
	Model   string
	System  string
	Options string // a JSON object of model options, the server's to read; "" is {}
	Created time.Time
	Updated time.Time // of the last change to it or its messages
	// Messages is how many messages it holds (filled by the readers;
	// ignored by the writers).
	Messages int
}

// Message is one turn of a conversation.
type Message struct {
	ID       string
	Role     string // "user" or "assistant"
	Content  string
	Thinking string // a reply's thinking, apart from its answer
	Stopped  bool   // a reply cut short by its client (the stop button)
	Stats    *ReplyStats
	Created  time.Time
}

// ReplyStats are a reply's figures, as the API's final chunk has them.
type ReplyStats struct {
	PromptTokens   int // the whole prompt (prompt_eval_count)
	CachedTokens   int // of those, served from the prefix cache (prompt_cached_count)
	RestoredTokens int // of those, loaded from the persisted K/V (kvcache.db)
	EvalTokens     int
	EvalDuration   time.Duration
}

const conversationColumns = `c.id, c.title, c.model, c.system, c.options, c.created, c.updated,
	(SELECT count(*) FROM messages m WHERE m.conversation = c.id)`

const messageColumns = `id, role, content, thinking, stopped, prompt_tokens, cached_tokens, restored_tokens, eval_tokens, eval_ns, created`

// newID is a random 16-hex-digit identifier (crypto/rand.Read does not
// fail).
func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// CreateConversation stores c under a new ID with Created and Updated now,
// and returns it.
func (s *Registry) CreateConversation(c Conversation) (Conversation, error) {
	c.ID, c.Messages = newID(), 0
	c.Created = s.now()
	c.Updated = c.Created
	if c.Options == "" {
		c.Options = "{}"
	}
	_, err := s.db.Exec(`INSERT INTO conversations (id, title, model, system, options, created, updated)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, c.ID, c.Title, c.Model, c.System, c.Options, c.Created.UnixNano(), c.Updated.UnixNano())
	if err != nil {
		return Conversation{}, s.writeErr("create conversation", err)
	}
	return c, nil
}

// Conversations returns the conversations whose title contains query,
// ignoring case ("" matches all), the most recently updated first.
func (s *Registry) Conversations(query string) ([]Conversation, error) {
	rows, err := s.db.Query("SELECT " + conversationColumns + " FROM conversations c ORDER BY c.updated DESC, c.rowid DESC")
	if err != nil {
		return nil, fmt.Errorf("store: list conversations: %w", err)
	}
	defer rows.Close()
	query = strings.ToLower(query)
	var cs []Conversation
	for rows.Next() {
		c, err := scanConversation(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list conversations: %w", err)
		}
		// in Go, not LIKE: SQLite folds the case of ASCII letters only
		if strings.Contains(strings.ToLower(c.Title), query) {
			cs = append(cs, c)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list conversations: %w", err)
	}
	return cs, nil
}

// Conversation returns the conversation of id and its messages in order,
// or an error wrapping ErrNotFound. Two statements, not a transaction:
// a read transaction would begin IMMEDIATE (openDB's _txlock) and wait for
// writers, where WAL lets readers pass.
func (s *Registry) Conversation(id string) (Conversation, []Message, error) {
	c, err := scanConversation(s.db.QueryRow("SELECT "+conversationColumns+" FROM conversations c WHERE c.id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Conversation{}, nil, fmt.Errorf("%w: conversation %q", ErrNotFound, id)
	}
	if err != nil {
		return Conversation{}, nil, fmt.Errorf("store: conversation %q: %w", id, err)
	}
	rows, err := s.db.Query("SELECT "+messageColumns+" FROM messages WHERE conversation = ? ORDER BY seq", id)
	if err != nil {
		return Conversation{}, nil, fmt.Errorf("store: conversation %q: %w", id, err)
	}
	defer rows.Close()
	var ms []Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return Conversation{}, nil, fmt.Errorf("store: conversation %q: %w", id, err)
		}
		ms = append(ms, m)
	}
	if err := rows.Err(); err != nil {
		return Conversation{}, nil, fmt.Errorf("store: conversation %q: %w", id, err)
	}
	c.Messages = len(ms)
	return c, ms, nil
}

// UpdateConversation sets the title, model, system prompt and options of
// the conversation of c.ID, and its Updated to now; it returns the
// conversation as stored, or an error wrapping ErrNotFound.
func (s *Registry) UpdateConversation(c Conversation) (Conversation, error) {
	if c.Options == "" {
		c.Options = "{}"
	}
	r, err := s.db.Exec(`UPDATE conversations SET title = ?, model = ?, system = ?, options = ?, updated = ? WHERE id = ?`,
		c.Title, c.Model, c.System, c.Options, s.now().UnixNano(), c.ID)
	if err != nil {
		return Conversation{}, s.writeErr("update conversation "+c.ID, err)
	}
	if n, _ := r.RowsAffected(); n == 0 {
		return Conversation{}, fmt.Errorf("%w: conversation %q", ErrNotFound, c.ID)
	}
	c, _, err = s.Conversation(c.ID)
	return c, err
}

// DeleteConversation removes the conversation of id and its messages, or
// returns an error wrapping ErrNotFound.
func (s *Registry) DeleteConversation(id string) error {
	r, err := s.db.Exec("DELETE FROM conversations WHERE id = ?", id) // messages: ON DELETE CASCADE
	if err != nil {
		return s.writeErr("delete conversation "+id, err)
	}
	if n, _ := r.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: conversation %q", ErrNotFound, id)
	}
	return nil
}

// AddMessage appends m to the conversation conv under a new ID (or m.ID
// when set) with Created now, and returns it as stored.
func (s *Registry) AddMessage(conv string, m Message) (Message, error) {
	if m.ID == "" {
		m.ID = newID()
	}
	m.Created = s.now()
	var st ReplyStats
	var prompt, cached, restored, eval, evalNS sql.NullInt64
	if m.Stats != nil {
		st = *m.Stats
		prompt = sql.NullInt64{Int64: int64(st.PromptTokens), Valid: true}
		cached = sql.NullInt64{Int64: int64(st.CachedTokens), Valid: true}
		restored = sql.NullInt64{Int64: int64(st.RestoredTokens), Valid: true}
		eval = sql.NullInt64{Int64: int64(st.EvalTokens), Valid: true}
		evalNS = sql.NullInt64{Int64: int64(st.EvalDuration), Valid: true}
	}
	err := s.inConversation(conv, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO messages (id, conversation, seq, role, content, thinking, stopped,
				prompt_tokens, cached_tokens, restored_tokens, eval_tokens, eval_ns, created)
			VALUES (?1, ?2, (SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE conversation = ?2),
				?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)`,
			m.ID, conv, m.Role, m.Content, m.Thinking, m.Stopped, prompt, cached, restored, eval, evalNS, m.Created.UnixNano())
		return err
	})
	if err != nil {
		return Message{}, err
	}
	return m, nil
}

// EditMessage sets the content of message id of conversation conv and
// deletes every message after it, in one transaction. It returns an error
// wrapping ErrNotFound when either is unknown.
func (s *Registry) EditMessage(conv, id, content string) error {
	return s.inConversation(conv, func(tx *sql.Tx) error {
		r, err := tx.Exec("UPDATE messages SET content = ? WHERE conversation = ? AND id = ?", content, conv, id)
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: message %q in conversation %q", ErrNotFound, id, conv)
		}
		return deleteAfter(tx, conv, id)
	})
}

// TruncateAfter deletes the messages of conversation conv that follow
// message id, or returns an error wrapping ErrNotFound.
func (s *Registry) TruncateAfter(conv, id string) error {
	return s.inConversation(conv, func(tx *sql.Tx) error { return deleteAfter(tx, conv, id) })
}

func deleteAfter(tx *sql.Tx, conv, id string) error {
	var seq int64
	err := tx.QueryRow("SELECT seq FROM messages WHERE conversation = ? AND id = ?", conv, id).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: message %q in conversation %q", ErrNotFound, id, conv)
	}
	if err != nil {
		return err
	}
	_, err = tx.Exec("DELETE FROM messages WHERE conversation = ? AND seq > ?", conv, seq)
	return err
}

// inConversation runs f in a transaction that first sets the Updated of
// conversation conv to now (an error wrapping ErrNotFound when there is
// none), and commits when f succeeds.
func (s *Registry) inConversation(conv string, f func(*sql.Tx) error) error {
	tx, err := s.db.Begin()
	if err != nil {
		return s.writeErr("conversation "+conv, err)
	}
	defer tx.Rollback()
	r, err := tx.Exec("UPDATE conversations SET updated = ? WHERE id = ?", s.now().UnixNano(), conv)
	if err != nil {
		return s.writeErr("conversation "+conv, err)
	}
	if n, _ := r.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: conversation %q", ErrNotFound, conv)
	}
	if err := f(tx); err != nil {
		if errors.Is(err, ErrNotFound) {
			return err
		}
		return s.writeErr("conversation "+conv, err)
	}
	if err := tx.Commit(); err != nil {
		return s.writeErr("conversation "+conv, err)
	}
	return nil
}

// writeErr wraps a failed write of folio.db, naming the fix for a full disk.
func (s *Registry) writeErr(what string, err error) error {
	if isFull(err) {
		return fmt.Errorf("store: %s: the disk holding %s is full: free disk space and try again: %w", what, s.home, err)
	}
	return fmt.Errorf("store: %s: %w", what, err)
}

func scanConversation(r scanner) (Conversation, error) {
	var (
		c                Conversation
		created, updated int64
	)
	err := r.Scan(&c.ID, &c.Title, &c.Model, &c.System, &c.Options, &created, &updated, &c.Messages)
	c.Created, c.Updated = time.Unix(0, created), time.Unix(0, updated)
	return c, err
}

func scanMessage(r scanner) (Message, error) {
	var (
		m                                    Message
		prompt, cached, restored, eval, evNS sql.NullInt64
		created                              int64
	)
	err := r.Scan(&m.ID, &m.Role, &m.Content, &m.Thinking, &m.Stopped, &prompt, &cached, &restored, &eval, &evNS, &created)
	m.Created = time.Unix(0, created)
	if prompt.Valid {
		m.Stats = &ReplyStats{PromptTokens: int(prompt.Int64), CachedTokens: int(cached.Int64), RestoredTokens: int(restored.Int64),
			EvalTokens: int(eval.Int64), EvalDuration: time.Duration(evNS.Int64)}
	}
	return m, err
}
