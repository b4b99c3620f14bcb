package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"folio/models/gguf"
)

func newShowCmd() *cobra.Command {
	var verbose, asJSON bool
	var maxArray int
	cmd := &cobra.Command{
		Use:   "show MODEL",
		Short: "Show a model's architecture, size, quantization and tokenizer",
		Long: "Show reads a GGUF file's header (never its weights) and prints a summary.\n" +
			"MODEL is a path to a .gguf file or a name found in FOLIO_MODELS_PATH.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := locateModel(args[0])
			if err != nil {
				return err
			}
			f, err := gguf.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			out := cmd.OutOrStdout()
			if asJSON {
				return showJSON(out, f, maxArray)
			}
			showSummary(out, f)
			if verbose {
				showAll(out, f, maxArray)
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "also list every metadata key and tensor")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object with metadata and tensors")
	cmd.Flags().IntVar(&maxArray, "max-array", 16, "show at most this many items of an array (0: all)")
	return cmd
}

func showSummary(out io.Writer, f *gguf.File) {
	s := f.Summary()
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "  %s\t%s\n", k, v) }
	fmt.Fprintln(tw, "Model")
	row("architecture", orDash(s.Architecture))
	if s.Name != "" {
		row("name", s.Name)
	}
	row("parameters", humanCount(s.Parameters))
	row("context length", orDash(intOrEmpty(s.ContextLength)))
	row("embedding length", orDash(intOrEmpty(s.EmbeddingLength)))
	row("layers", orDash(intOrEmpty(s.BlockCount)))
	if s.HeadCount > 0 {
		row("attention heads", fmt.Sprintf("%d (%d KV)", s.HeadCount, s.HeadCountKV))
	}
	row("quantization", orDash(s.Quantization)+typeMix(s))
	tok := orDash(tokenizerKinds[f.String("tokenizer.ggml.model")] + s.Tokenizer)
	if s.VocabSize > 0 {
		tok += fmt.Sprintf(", %d tokens", s.VocabSize)
	}
	row("tokenizer", tok)
	row("tensors", fmt.Sprintf("%d, %s", s.TensorCount, humanBytes(s.TensorBytes)))
	row("file", fmt.Sprintf("%s (%s, GGUF v%d)", f.Path, humanBytes(f.Size), f.Version))
	tw.Flush()
}

// tokenizerKinds names the algorithm behind each tokenizer.ggml.model value.
var tokenizerKinds = map[string]string{
	"llama": "SentencePiece BPE: ",
	"gpt2":  "byte-level BPE: ",
	"bert":  "WordPiece: ",
	"t5":    "SentencePiece Unigram: ",
	"rwkv":  "RWKV greedy: ",
}

// typeMix lists the tensor types by bytes, e.g. " (Q4_K 80%, Q6_K 15%, F32 5%)".
func typeMix(s gguf.Summary) string {
	if s.TensorBytes == 0 {
		return ""
	}
	types := make([]gguf.TensorType, 0, len(s.TypeBytes))
	for t := range s.TypeBytes {
		types = append(types, t)
	}
	sort.Slice(types, func(i, j int) bool { return s.TypeBytes[types[i]] > s.TypeBytes[types[j]] })
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = fmt.Sprintf("%s %.0f%%", t, 100*float64(s.TypeBytes[t])/float64(s.TensorBytes))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func showAll(out io.Writer, f *gguf.File, maxArray int) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\nMetadata (%d keys)\n", len(f.KV))
	for _, kv := range f.KV {
		typ, _ := gguf.TypeOf(kv.Value)
		name := typ.String()
		if a, ok := kv.Value.(gguf.Array); ok {
			name = fmt.Sprintf("[%d]%s", a.Len(), a.Elem)
		}
		b, _ := marshal(gguf.JSONValue(kv.Value, maxArray))
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", kv.Key, name, b)
	}
	fmt.Fprintf(tw, "\nTensors (%d, data at offset %d)\n", len(f.Tensors), f.DataOffset)
	fmt.Fprintf(tw, "  name\ttype\tshape\toffset\tbytes\n")
	for _, t := range f.Tensors {
		fmt.Fprintf(tw, "  %s\t%s\t%v\t%d\t%d\n", t.Name, t.Type, t.Shape, t.Offset, t.Bytes)
	}
	tw.Flush()
}

type jsonTensor struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Shape  []uint64 `json:"shape"`
	Offset uint64   `json:"offset"`
	Bytes  int64    `json:"bytes"`
}

func showJSON(out io.Writer, f *gguf.File, maxArray int) error {
	// Metadata keeps the file's key order: build the object by hand.
	var b strings.Builder
	b.WriteString(`{"version":`)
	fmt.Fprint(&b, f.Version)
	fmt.Fprintf(&b, `,"tensor_data_offset":%d,"metadata":{`, f.DataOffset)
	for i, kv := range f.KV {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := marshal(kv.Key)
		v, err := marshal(gguf.JSONValue(kv.Value, maxArray))
		if err != nil {
			return fmt.Errorf("show: metadata %s: %w", kv.Key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	tensors := make([]jsonTensor, len(f.Tensors))
	for i, t := range f.Tensors {
		tensors[i] = jsonTensor{t.Name, t.Type.String(), t.Shape, t.Offset, t.Bytes}
	}
	ts, err := marshal(tensors)
	if err != nil {
		return err
	}
	b.WriteString(`},"tensors":`)
	b.Write(ts)
	b.WriteString("}\n")
	_, err = io.WriteString(out, b.String())
	return err
}

// marshal is json.Marshal without HTML escaping: token texts such as "<s>"
// stay readable.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func intOrEmpty(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

// humanCount prints 292800 as "292.80K" and 1235814400 as "1.24B".
func humanCount(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.2fK", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// humanBytes prints sizes in decimal units, as Ollama does ("1.3 GB").
func humanBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.2f KB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
