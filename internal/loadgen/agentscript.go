package loadgen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"folio/models/template"
	"folio/models/tokenizer"
)

// Range is a span of token counts, both ends included.
type Range struct{ Min, Max int }

// ParseRange reads "300-1500", or "500" for a single length.
func ParseRange(s string) (Range, error) {
	lo, hi, found := strings.Cut(s, "-")
	if !found {
		hi = lo
	}
	a, err1 := strconv.Atoi(strings.TrimSpace(lo))
	b, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if err1 != nil || err2 != nil || a < 1 || b < a {
		return Range{}, fmt.Errorf("loadgen: %q: want a token count or a range such as 300-1500, both at least 1, the first not larger", s)
	}
	return Range{a, b}, nil
}

func (r Range) String() string { return fmt.Sprintf("%d-%d", r.Min, r.Max) }

func (r Range) draw(rnd *rand.Rand) int { return r.Min + rnd.IntN(r.Max-r.Min+1) }

// AgentConfig is an agent loop: Agents conversations on one model, each
// with the same system prompt and Tools tool definitions (SystemTokens
// tokens together, as the chat template renders them), a TaskTokens-token
// task from the user, then Turns turns. Turn 1 answers the task; every
// later turn appends the model's last reply and a tool result of Result
// tokens, and asks for a reply of Reply tokens (num_predict, greedy). The
// agents take turns: agent 1's turn 1, agent 2's turn 1, agent 1's turn
// 2, … one request at a time.
type AgentConfig struct {
	SystemTokens, Tools, TaskTokens int
	Turns, Agents                   int
	Result, Reply                   Range
	// RestartAfter is the turns every agent has run when the restart pass
	// closes its engine and store and opens them again; 0: Turns/2.
	RestartAfter int
	// NoCacheEvery thins the pass without the prefix cache to turns 1,
	// 1+k, 1+2k, … and the turn after the restart (there a turn's time
	// does not depend on the turns before it); ≤ 1: every turn.
	NoCacheEvery int
	Home         string // the restart pass's prefix store
	Seed         uint64
	// Progress, when set, is told of each turn as it ends.
	Progress func(pass string, t AgentTurn)
}

func (c *AgentConfig) check() error {
	switch {
	case c.Turns < 2 || c.Agents < 1:
		return fmt.Errorf("loadgen: agent: turns %d, agents %d: use at least 2 turns and 1 agent", c.Turns, c.Agents)
	case c.Tools < 0 || c.Tools > len(agentTools):
		return fmt.Errorf("loadgen: agent: %d tools: use 0 to %d", c.Tools, len(agentTools))
	case c.SystemTokens < 1 || c.TaskTokens < 1 || c.Result.Min < 1 || c.Reply.Min < 1:
		return fmt.Errorf("loadgen: agent: system %d, task %d, results %v, replies %v: use at least 1 token each",
			c.SystemTokens, c.TaskTokens, c.Result, c.Reply)
	case c.Home == "":
		return fmt.Errorf("loadgen: agent: the restart pass needs a folder for its store")
	}
	if c.RestartAfter == 0 {
		c.RestartAfter = c.Turns / 2
	}
	if c.RestartAfter < 1 || c.RestartAfter >= c.Turns {
		return fmt.Errorf("loadgen: agent: restart after turn %d: use 1 to %d (turns - 1)", c.RestartAfter, c.Turns-1)
	}
	return nil
}

// AgentScript is what the agents send: the shared system prompt and
// tools, each agent's task and tool results, the length of each reply.
// The replies are the model's, recorded by the first pass (Record) and
// sent as they were in the others, so that every pass sends the same
// prompts.
type AgentScript struct {
	cfg     AgentConfig
	tok     *tokenizer.Tokenizer
	tmpl    *template.Template
	bos     bool // the vocabulary wants BOS first
	system  string
	tools   []any
	tasks   []string   // [agent]
	results [][]string // [agent][turn-1]: the tool result sent in turn+1
	predict [][]int    // [agent][turn-1]: num_predict
	replies [][]string // [agent][turn-1]: recorded
	// computed is [agent][turn-1]: the prompt and the generated tokens,
	// as the first pass computed them
	computed [][][]int32
	// systemTokens is what the template renders of the system prompt and
	// tools (the first prompt without the task's tokens)
	systemTokens int
}

// NewAgentScript draws the conversations of cfg for the vocabulary of
// tok, to be rendered by the Jinja chat template src.
func NewAgentScript(tok *tokenizer.Tokenizer, src string, cfg AgentConfig) (*AgentScript, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	tmpl, err := template.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("loadgen: the chat template: %w", err)
	}
	v := tok.Vocab()
	s := &AgentScript{cfg: cfg, tok: tok, tmpl: tmpl, bos: v.AddBOS && v.BOS >= 0}
	for _, t := range agentTools[:cfg.Tools] {
		data, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		tv, err := template.DecodeJSON(data)
		if err != nil {
			return nil, err
		}
		s.tools = append(s.tools, tv)
	}
	for a := range cfg.Agents {
		r := rand.New(rand.NewPCG(cfg.Seed, uint64(a+1)))
		s.tasks = append(s.tasks, s.text(r, cfg.TaskTokens, 0))
		var results []string
		var predict []int
		for range cfg.Turns {
			results = append(results, s.text(r, cfg.Result.draw(r), 12))
			predict = append(predict, cfg.Reply.draw(r))
		}
		s.results, s.predict = append(s.results, results), append(s.predict, predict)
		s.replies = append(s.replies, make([]string, cfg.Turns))
		s.computed = append(s.computed, make([][]int32, cfg.Turns))
	}
	// the system prompt fills what the template and tools leave of
	// SystemTokens
	frame, err := s.Prompt(0, 1)
	if err != nil {
		return nil, err
	}
	task := len(tok.Encode(s.tasks[0], tokenizer.EncodeOptions{}))
	fill := cfg.SystemTokens - (len(frame) - task)
	if fill < 1 {
		return nil, fmt.Errorf("loadgen: agent: the chat template renders the %d tools in %d tokens, leaving none of the %d of the system prompt: ask for more system tokens or fewer tools",
			cfg.Tools, len(frame)-task, cfg.SystemTokens)
	}
	s.system = s.text(rand.New(rand.NewPCG(cfg.Seed, 0)), fill, 16)
	first, err := s.Prompt(0, 1)
	if err != nil {
		return nil, err
	}
	s.systemTokens = len(first) - task
	return s, nil
}

// text is about n tokens of words drawn from r, a line break after every
// line words (none when 0).
func (s *AgentScript) text(r *rand.Rand, n, line int) string {
	pick := make([]string, 0, 2*n)
	for range 2 * n {
		pick = append(pick, words[r.IntN(len(words))])
	}
	join := func(k int) string {
		var b strings.Builder
		for i, w := range pick[:k] {
			if i > 0 {
				if line > 0 && i%line == 0 {
					b.WriteByte('\n')
				} else {
					b.WriteByte(' ')
				}
			}
			b.WriteString(w)
		}
		return b.String()
	}
	// the fewest words of at least n tokens, found by bisection (a word
	// is a token or more)
	lo, hi := 1, len(pick)
	for lo < hi {
		mid := (lo + hi) / 2
		if len(s.tok.Encode(join(mid), tokenizer.EncodeOptions{})) >= n {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return join(lo)
}

// messages is agent a's conversation as turn t sends it.
func (s *AgentScript) messages(a, t int) []template.Message {
	msgs := []template.Message{{Role: "system", Content: s.system}, {Role: "user", Content: s.tasks[a]}}
	for j := range t - 1 {
		msgs = append(msgs, template.Message{Role: "assistant", Content: s.replies[a][j]},
			template.Message{Role: "tool", Content: s.results[a][j], ToolName: agentTools[j%max(s.cfg.Tools, 1)].Function.Name})
	}
	return msgs
}

// Prompt is agent a's turn t (from 1) rendered by the chat template and
// tokenized as the server does: special tokens parsed, BOS added when the
// vocabulary wants it and the template did not write it.
func (s *AgentScript) Prompt(a, t int) ([]int32, error) {
	c := template.Context{Messages: s.messages(a, t), Tools: s.tools, AddGenerationPrompt: true}
	v := s.tok.Vocab()
	var bos string
	if v.BOS >= 0 {
		bos = s.tok.Piece(v.BOS)
		c.BOSToken = &bos
	}
	if v.EOS >= 0 {
		eos := s.tok.Piece(v.EOS)
		c.EOSToken = &eos
	}
	text, err := s.tmpl.Render(c)
	if err != nil {
		return nil, fmt.Errorf("loadgen: rendering agent %d's turn %d: %w", a+1, t, err)
	}
	add := s.bos && !strings.HasPrefix(text, bos)
	return s.tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: add, ParseSpecial: true}), nil
}

// Record keeps agent a's reply of turn t (the generated tokens' text),
// which the later turns send.
func (s *AgentScript) Record(a, t int, ids []int32) {
	s.replies[a][t-1] = s.tok.Decode(ids, tokenizer.DecodeOptions{})
}

// NumCtx is a context that holds every turn: the last turn's prompt with
// each reply counted at twice its num_predict (a reply's text may
// tokenize to more tokens than were generated), and its own reply.
func (s *AgentScript) NumCtx() (int, error) {
	longest := 0
	for a := range s.cfg.Agents {
		p, err := s.Prompt(a, s.cfg.Turns)
		if err != nil {
			return 0, err
		}
		n := len(p) + s.predict[a][s.cfg.Turns-1]
		for _, k := range s.predict[a][:s.cfg.Turns-1] {
			n += 2 * k
		}
		longest = max(longest, n)
	}
	return (longest + 16 + 255) &^ 255, nil
}

// agentTool is a tool definition in the OpenAI form chat templates read.
type agentTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string     `json:"name"`
		Description string     `json:"description"`
		Parameters  toolSchema `json:"parameters"`
	} `json:"function"`
}

type toolSchema struct {
	Type       string                `json:"type"`
	Properties map[string]toolSchema `json:"properties,omitempty"`
	Required   []string              `json:"required,omitempty"`
	Desc       string                `json:"description,omitempty"`
}

func tool(name, desc string, params ...string) agentTool {
	t := agentTool{Type: "function"}
	t.Function.Name, t.Function.Description = name, desc
	t.Function.Parameters = toolSchema{Type: "object", Properties: map[string]toolSchema{}}
	for i := 0; i+1 < len(params); i += 2 {
		t.Function.Parameters.Properties[params[i]] = toolSchema{Type: "string", Desc: params[i+1]}
		t.Function.Parameters.Required = append(t.Function.Parameters.Required, params[i])
	}
	return t
}

// agentTools are a coding agent's tools; a run takes the first Tools.
var agentTools = []agentTool{
	tool("read_file", "Read a file of the workspace and return its lines, numbered.", "path", "the file, relative to the workspace root", "range", "first-last lines, e.g. 10-80; all when empty"),
	tool("write_file", "Create a file or replace its whole content.", "path", "the file, relative to the workspace root", "content", "the new content"),
	tool("edit_file", "Replace one exact occurrence of a string in a file.", "path", "the file", "old", "the text to replace, unique in the file", "new", "the replacement"),
	tool("list_directory", "List the entries of a folder with their sizes.", "path", "the folder"),
	tool("glob", "Find files whose paths match a pattern.", "pattern", "a glob such as **/*.go"),
	tool("grep", "Search file contents with a regular expression.", "pattern", "an RE2 expression", "path", "the folder to search", "include", "a glob of files to search"),
	tool("run_command", "Run a shell command in the workspace and return its output and exit status.", "command", "the command line", "timeout", "seconds before it is stopped"),
	tool("run_tests", "Run the project's tests, or some of them.", "filter", "a test name pattern; all when empty"),
	tool("git_status", "Show the working tree's changed and untracked files."),
	tool("git_diff", "Show the changes of the working tree or of a commit.", "target", "a commit, a range or a path; the working tree when empty"),
	tool("git_log", "Show recent commits.", "path", "only commits touching this path", "count", "how many"),
	tool("git_commit", "Commit the staged changes.", "message", "the commit message"),
	tool("find_symbol", "Find where a function, type or variable is defined.", "name", "the symbol", "language", "the source language"),
	tool("find_references", "Find the uses of a symbol.", "name", "the symbol", "path", "where to look"),
	tool("web_fetch", "Fetch a web page and return it as text.", "url", "the address", "prompt", "what to extract from it"),
	tool("web_search", "Search the web.", "query", "the search terms"),
	tool("todo_write", "Replace the task list shown to the user.", "items", "the tasks, one a line, with their states"),
	tool("ask_user", "Ask the user a question and wait for the answer.", "question", "the question"),
	tool("format_code", "Format source files with the project's formatter.", "paths", "the files, space-separated"),
	tool("lint", "Run the project's linters and return their findings.", "path", "the files or folder to check"),
}
