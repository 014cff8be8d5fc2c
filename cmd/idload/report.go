package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Report is idload's machine-readable result (-json). Its keys are flat and
// unique so that a shell script can pick one with grep or sed; keep them so.
type Report struct {
	Tool       string   `json:"tool"`
	StartedAt  string   `json:"started_at"`
	GoVersion  string   `json:"go_version"`
	GOMAXPROCS int      `json:"gomaxprocs"`
	Mode       string   `json:"mode"`
	URLs       []string `json:"urls"`
	AppTag     string   `json:"app_tag,omitempty"`
	Count      int      `json:"count"`
	Clients    int      `json:"clients"`
	WarmupS    float64  `json:"warmup_s"`
	DurationS  float64  `json:"duration_s"` // asked for
	ElapsedS   float64  `json:"elapsed_s"`  // measured phase as it ran
	Rate       float64  `json:"rate"`       // requests/s asked for (open loop); 0: closed loop
	LateSends  int64    `json:"late_sends"` // open loop: sent a whole interval behind schedule

	// Measured phase: responses received, resp_code 0 answers, IDs in them.
	Requests int64   `json:"requests"`
	OK       int64   `json:"ok"`
	IDs      int64   `json:"ids"`
	ReqPerS  float64 `json:"req_per_s"`
	IDsPerS  float64 `json:"ids_per_s"`

	// Latency of every response in the measured phase, request sent to body
	// read, from an HDR histogram (1µs resolution, 3 significant digits).
	P50Us  float64 `json:"p50_us"`
	P90Us  float64 `json:"p90_us"`
	P99Us  float64 `json:"p99_us"`
	P999Us float64 `json:"p999_us"`
	MaxUs  float64 `json:"max_us"`
	MeanUs float64 `json:"mean_us"`

	// Errors in the measured phase: by resp_code, by HTTP status, and
	// connection-level failures (no HTTP answer at all).
	ErrorsByRespCode map[string]int64 `json:"errors_by_resp_code"`
	Errors           int64            `json:"errors"` // sum of the above and transport_errors
	HTTPStatus       map[string]int64 `json:"http_status"`
	TransportErrors  int64            `json:"transport_errors"`

	// Correctness over the whole run, warm-up included.
	WarmupRequests  int64    `json:"warmup_requests"`
	TotalRequests   int64    `json:"total_requests"` // responses, warm-up included
	Malformed       int64    `json:"malformed"`      // bodies or statuses that break the contract
	OrderViolations int64    `json:"order_violations"`
	IDsChecked      int64    `json:"ids_checked"`
	DupCheck        string   `json:"dup_check"` // complete | partial (-max-ids) | off
	Duplicates      int64    `json:"duplicates"`
	DuplicateIDs    []int64  `json:"duplicate_examples,omitempty"`
	Examples        []string `json:"examples,omitempty"` // first few problems, verbatim
	Pass            bool     `json:"pass"`               // no duplicate, order violation or malformed answer

	// idload's own CPU use: near one core per GOMAXPROCS means the load
	// tool, not the server, may be the limit.
	ClientCPUS    float64 `json:"client_cpu_s"`
	ClientCPUUtil float64 `json:"client_cpu_util"` // CPU seconds per wall second
}

func buildReport(cfg *config, clients []*client, start, measureAt, end time.Time, cpu time.Duration) *Report {
	gv, procs := goInfo()
	r := &Report{
		Tool:             "idload",
		StartedAt:        start.UTC().Format(time.RFC3339),
		GoVersion:        gv,
		GOMAXPROCS:       procs,
		Mode:             string(cfg.Mode),
		URLs:             cfg.URLs,
		Count:            cfg.Count,
		Clients:          cfg.Clients,
		WarmupS:          cfg.Warmup.Seconds(),
		DurationS:        cfg.Duration.Seconds(),
		Rate:             cfg.Rate,
		ErrorsByRespCode: map[string]int64{},
		HTTPStatus:       map[string]int64{},
	}
	if cfg.Mode != modeSnowflake {
		r.AppTag = cfg.Tag
	}
	elapsed := end.Sub(measureAt)
	if elapsed < 0 {
		elapsed = 0 // stopped during the warm-up
	}
	r.ElapsedS = elapsed.Seconds()

	hist := hdrhistogram.New(histLowest, histHighest, histDigits)
	var lists [][]int64
	partial := false
	for _, c := range clients {
		hist.Merge(c.hist)
		r.Requests += c.requests
		r.OK += c.ok
		r.IDs += c.ids
		r.WarmupRequests += c.warmupRequests
		r.TotalRequests += c.totalRequests
		r.TransportErrors += c.transport
		r.LateSends += c.late
		r.Malformed += c.malformed
		r.OrderViolations += c.order
		for code, n := range c.byCode {
			r.ErrorsByRespCode[strconv.FormatInt(code, 10)] += n
			r.Errors += n
		}
		for st, n := range c.byStatus {
			r.HTTPStatus[strconv.Itoa(st)] += n
		}
		for _, e := range c.examples {
			if len(r.Examples) < 2*maxExamples {
				r.Examples = append(r.Examples, e)
			}
		}
		for _, k := range c.keep {
			lists = append(lists, k.ids)
		}
		partial = partial || c.dropped
	}
	r.Errors += r.TransportErrors
	if s := r.ElapsedS; s > 0 {
		r.ReqPerS = float64(r.OK) / s
		r.IDsPerS = float64(r.IDs) / s
	}
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	r.P50Us = us(hist.ValueAtQuantile(50))
	r.P90Us = us(hist.ValueAtQuantile(90))
	r.P99Us = us(hist.ValueAtQuantile(99))
	r.P999Us = us(hist.ValueAtQuantile(99.9))
	r.MaxUs = us(hist.Max())
	r.MeanUs = hist.Mean() / 1e3

	switch {
	case !cfg.KeepIDs:
		r.DupCheck = "off"
	default:
		d := findDuplicates(lists)
		r.IDsChecked, r.Duplicates, r.DuplicateIDs = d.Checked, d.Duplicates, d.Examples
		r.DupCheck = "complete"
		if partial {
			r.DupCheck = "partial (-max-ids reached)"
		}
	}
	r.Pass = r.Duplicates == 0 && r.OrderViolations == 0 && r.Malformed == 0
	r.ClientCPUS = cpu.Seconds()
	if wall := end.Sub(start).Seconds(); wall > 0 {
		r.ClientCPUUtil = cpu.Seconds() / wall
	}
	return r
}

// writeTable prints the report for a human.
func writeTable(w io.Writer, r *Report) {
	what := r.Mode
	if r.AppTag != "" {
		what += " app_tag=" + r.AppTag
	}
	if r.Count > 0 {
		what += " count=" + strconv.Itoa(r.Count)
	}
	fmt.Fprintf(w, "idload %s, %d clients -> %s\n", what, r.Clients, strings.Join(r.URLs, ", "))
	fmt.Fprintf(w, "  measured   %.2fs after %.2fs warm-up (%s, GOMAXPROCS %d)\n", r.ElapsedS, r.WarmupS, r.GoVersion, r.GOMAXPROCS)
	fmt.Fprintf(w, "  requests   %d ok of %d  %12.0f req/s\n", r.OK, r.Requests, r.ReqPerS)
	if r.Rate > 0 {
		fmt.Fprintf(w, "  open loop  %.0f req/s asked; %d sends a whole interval late (the tool or the server fell behind)\n", r.Rate, r.LateSends)
	}
	fmt.Fprintf(w, "  IDs        %d  %12.0f IDs/s\n", r.IDs, r.IDsPerS)
	fmt.Fprintf(w, "  latency    p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  mean %s\n",
		fmtUs(r.P50Us), fmtUs(r.P90Us), fmtUs(r.P99Us), fmtUs(r.P999Us), fmtUs(r.MaxUs), fmtUs(r.MeanUs))
	errs := "none"
	if r.Errors > 0 {
		var parts []string
		for _, code := range slices.Sorted(maps.Keys(r.ErrorsByRespCode)) {
			parts = append(parts, fmt.Sprintf("resp_code %s: %d", code, r.ErrorsByRespCode[code]))
		}
		if r.TransportErrors > 0 {
			parts = append(parts, fmt.Sprintf("transport: %d", r.TransportErrors))
		}
		errs = strings.Join(parts, ", ")
	}
	fmt.Fprintf(w, "  errors     %s\n", errs)
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "  checks     %s: %d IDs checked (%s), %d duplicates, %d order violations, %d malformed\n",
		verdict, r.IDsChecked, r.DupCheck, r.Duplicates, r.OrderViolations, r.Malformed)
	if len(r.DuplicateIDs) > 0 {
		fmt.Fprintf(w, "  duplicated %v\n", r.DuplicateIDs)
	}
	for _, e := range r.Examples {
		fmt.Fprintf(w, "  example    %s\n", e)
	}
	fmt.Fprintf(w, "  client CPU %.2fs (%.0f%% of one core)\n", r.ClientCPUS, 100*r.ClientCPUUtil)
}

func fmtUs(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.2fs", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.2fms", us/1e3)
	}
	return fmt.Sprintf("%.0fµs", us)
}
