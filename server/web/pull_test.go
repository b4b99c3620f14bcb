package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestModelsAndPullInBrowser: the Models dialog lists each model with the
// size, family, parameters, quantization and context that /api/tags and
// /api/show give; pulling a model from a (fake, plain-HTTP) registry moves
// the progress bar to 100%, through the values between while the
// registry holds the download, and the model joins the list and the
// picker; a pull that fails says why.
func TestModelsAndPullInBrowser(t *testing.T) {
	hub, data := newHub(t)
	hub.Hold = make(chan struct{})
	hub.HoldAfter.Store(int64(len(data) / 16)) // every part (of 256 KiB) waits part way
	f := newFolio(t)
	p := newPage(t)
	p.open(f.URL + "/")
	p.do("Models", chromedp.Click(chromedp.CSS("#open-models")))
	p.waitFor("the models table", `document.getElementById("models-dialog").open && document.querySelector("#model-rows tr[data-model]")`, 10*time.Second)

	var tags struct {
		Models []struct {
			Name    string `json:"name"`
			Size    int64  `json:"size"`
			Details struct {
				Family            string `json:"family"`
				ParameterSize     string `json:"parameter_size"`
				QuantizationLevel string `json:"quantization_level"`
			} `json:"details"`
		} `json:"models"`
	}
	getJSON(t, f.URL+"/api/tags", &tags)
	if len(tags.Models) != 1 {
		t.Fatalf("/api/tags: %+v", tags)
	}
	m := tags.Models[0]
	resp, err := http.Post(f.URL+"/api/show", "application/json", strings.NewReader(`{"model":"`+m.Name+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	var show struct {
		ModelInfo map[string]any `json:"model_info"`
	}
	json.NewDecoder(resp.Body).Decode(&show)
	resp.Body.Close()
	ctx := show.ModelInfo[fmt.Sprint(show.ModelInfo["general.architecture"])+".context_length"]
	want := []string{m.Name, fmt.Sprintf("%.1f MB", float64(m.Size)/1e6), m.Details.Family, m.Details.ParameterSize,
		m.Details.QuantizationLevel, fmt.Sprintf("%d,%03d", int(ctx.(float64))/1000, int(ctx.(float64))%1000)}
	row := eval[[]string](p, `[...document.querySelector("#model-rows tr[data-model]").children].map(e => e.textContent)`)
	if fmt.Sprint(row) != fmt.Sprint(want) {
		t.Errorf("the models table shows %q, want %q (from /api/tags and /api/show)", row, want)
	}

	eval[bool](p, `(() => {
		const bar = document.getElementById("pull-progress");
		window.__bar = [];
		new MutationObserver(() => window.__bar.push(bar.value)).observe(bar, { attributes: true, attributeFilter: ["value"] });
		return true;
	})()`)
	name := hub.Host() + "/library/tiny"
	p.do("Pull", chromedp.SendKeys(chromedp.CSS("#pull-name"), name), chromedp.Click(chromedp.CSS("#pull-insecure")),
		chromedp.Click(chromedp.CSS("#pull-start")))
	p.waitFor("the bar part way, while the registry holds", `(() => { const b = document.getElementById("pull-progress"); return !b.hidden && b.value > 0 && b.value < 100 })()`, 20*time.Second)
	close(hub.Hold)
	p.waitFor("the pull to end", `document.getElementById("pull-status").textContent.startsWith("Pulled")`, 30*time.Second)
	bar := eval[[]float64](p, `window.__bar`)
	if len(bar) < 2 || bar[len(bar)-1] != 100 {
		t.Errorf("the bar went through %v, want it to end at 100", bar)
	}
	for i := 1; i < len(bar); i++ {
		if bar[i] < bar[i-1] && bar[i-1] != 100 {
			t.Errorf("the bar went back, from %v to %v (%v)", bar[i-1], bar[i], bar)
		}
	}
	t.Logf("the bar went through %v", bar)
	p.waitFor("the pulled model listed and in the picker", fmt.Sprintf(`document.querySelector('#model-rows tr[data-model=%q]') && [...document.querySelectorAll("#model option")].some(o => o.value === %q)`,
		name+":latest", name+":latest"), 10*time.Second)

	eval[bool](p, `(() => { document.getElementById("pull-name").value = ""; return true })()`)
	p.do("Pull a model the registry lacks", chromedp.SendKeys(chromedp.CSS("#pull-name"), hub.Host()+"/library/nosuch"),
		chromedp.Click(chromedp.CSS("#pull-start")))
	p.waitFor("the failure", `document.getElementById("pull-status").textContent.startsWith("Pull failed")`, 30*time.Second)
	if status := eval[string](p, `document.getElementById("pull-status").textContent`); !strings.Contains(status, "nosuch") {
		t.Errorf("a failed pull says %q; want the model named", status)
	}
	var list bytes.Buffer
	fmt.Fprint(&list, eval[[]string](p, `[...document.querySelectorAll("#model-rows tr")].map(r => r.dataset.model)`))
	if list.String() != fmt.Sprintf("[%s stories260K:latest]", name+":latest") {
		t.Errorf("after the pulls the table lists %s", list.String())
	}
}
