package cmd

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"

	"folio/internal/fixtures"
)

// TestManageThroughServer: list, ps, stop, cp and rm against a server, as
// a person would use them after folio run loaded a model there.
func TestManageThroughServer(t *testing.T) {
	startServer(t)
	data, err := os.ReadFile(fixtures.Model(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	id := hex.EncodeToString(sum[:])[:12]

	run := func(args ...string) string {
		t.Helper()
		out, err := execute(t, args...)
		if err != nil {
			t.Fatalf("folio %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	rows := func(out string) [][]string {
		var r [][]string
		for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			r = append(r, regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1))
		}
		return r
	}

	list := rows(run("list"))
	want := [][]string{{"NAME", "ID", "SIZE", "MODIFIED"}, {"stories260K:latest", id, "1.2 MB"}}
	if len(list) != 2 || strings.Join(list[0], "|") != strings.Join(want[0], "|") ||
		strings.Join(list[1][:3], "|") != strings.Join(want[1], "|") || !strings.HasSuffix(list[1][3], "ago") {
		t.Errorf("list:\n%q\nwant rows like %q", list, want)
	}

	if ps := rows(run("ps")); len(ps) != 1 || strings.Join(ps[0], "|") != "NAME|ID|SIZE|PROCESSOR|CONTEXT|UNTIL" {
		t.Errorf("ps with nothing loaded: %q", ps)
	}
	run("run", "stories260k", "--num-predict", "4", "Once")
	ps := rows(run("ps"))
	if len(ps) != 2 || ps[1][0] != "stories260K:latest" || ps[1][1] != id || ps[1][3] != "100% CPU" ||
		ps[1][4] != "512" || !strings.HasSuffix(ps[1][5], "from now") {
		t.Errorf("ps after run: %q", ps)
	}
	if out := run("stop", "stories260k"); out != "" {
		t.Errorf("stop printed %q", out)
	}
	if ps := rows(run("ps")); len(ps) != 1 {
		t.Errorf("ps after stop: %q", ps)
	}

	if out := run("cp", "stories260k", "tiny-stories"); out != "copied 'stories260k' to 'tiny-stories'\n" {
		t.Errorf("cp printed %q", out)
	}
	if list := rows(run("list", "tiny")); len(list) != 2 || list[1][0] != "tiny-stories:latest" || list[1][1] != id {
		t.Errorf("list tiny after cp: %q", list)
	}
	if out := run("rm", "tiny-stories"); out != "deleted 'tiny-stories'\n" {
		t.Errorf("rm printed %q", out)
	}
	if list := rows(run("list", "tiny")); len(list) != 1 {
		t.Errorf("list tiny after rm: %q", list)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"stop", "nosuch"}, `couldn't find model "nosuch" to stop`},
		{[]string{"rm", "nosuch"}, `couldn't find model "nosuch" to delete`},
		{[]string{"cp", "nosuch", "x"}, `couldn't find model "nosuch" to copy`},
		{[]string{"rm", "stories260k"}, "folio does not delete files it did not create"},
		{[]string{"cp", "stories260k", "a b"}, "destination name"},
	} {
		if _, err := execute(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error containing %q", c.args, err, c.want)
		}
	}
}
