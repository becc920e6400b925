// pushpprof: a Go program of known shape that profiles itself with the standard
// library's runtime/pprof and pushes a CPU and a heap profile to a collector's
// /ingest in the form the Pyroscope Go SDK (pyroscope-go) uploads them: a
// multipart/form-data body with the gzipped pprof in a "profile" part (file name
// profile.pprof) and, for the heap, a "sample_type_config" JSON part
// (sample_type_config.json) giving each sample type's units and aggregation;
// the query string has name (APP{k=v,...}, labels sorted), from and until (Unix
// nanoseconds), spyName=gospy, sampleRate, units and aggregationType, and the
// token goes as "Authorization: Bearer". Run by tests/integration/test_sdk_go.c:
//
//	pushpprof -url URL -token TOKEN -app NAME -out DIR [-cpu-ms MS]
//
// burnThree and burnOne share the CPU 3:1 (slices of 30 and 10 ms of busy loop);
// retainHeap allocates 16 MiB in 8 KiB slices and keeps them. The pushed
// profiles are also written to DIR/cpu.pprof and DIR/heap.pprof, so that the
// test can compare them with what the collector exports. The last line printed
// is one JSON object: {"from":S,"until":S,"cpu_status":N,"heap_status":N}
// (times in Unix seconds, covering both pushes). Exit status 0 when both pushes
// were answered 200.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sampleType is one entry of the sample_type_config part, with the SDK's JSON
// names.
type sampleType struct {
	Units       string `json:"units,omitempty"`
	Aggregation string `json:"aggregation,omitempty"`
	DisplayName string `json:"display-name,omitempty"`
	Sampled     bool   `json:"sampled,omitempty"`
	Cumulative  bool   `json:"cumulative,omitempty"`
}

// The SDK's configuration for heap profiles.
var heapTypes = map[string]*sampleType{
	"alloc_objects": {Units: "objects"},
	"alloc_space":   {Units: "bytes"},
	"inuse_space":   {Units: "bytes", Aggregation: "average"},
	"inuse_objects": {Units: "objects", Aggregation: "average"},
}

// The SDK's configuration for mutex profiles: display names tell mutex from block.
var mutexTypes = map[string]*sampleType{
	"contentions": {DisplayName: "mutex_count", Units: "lock_samples"},
	"delay":       {DisplayName: "mutex_duration", Units: "lock_nanoseconds"},
}

// The SDK's configuration for goroutine profiles (a gauge).
var goroutineTypes = map[string]*sampleType{
	"goroutine": {DisplayName: "goroutines", Units: "goroutines", Aggregation: "average"},
}

var sink uint64

//go:noinline
func spin(d time.Duration) {
	end := time.Now().Add(d)
	x := sink
	for time.Now().Before(end) {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink = x
}

//go:noinline
func burnThree() { spin(30 * time.Millisecond) }

//go:noinline
func burnOne() { spin(10 * time.Millisecond) }

var kept [][]byte

var contended sync.Mutex

//go:noinline
func holdLock(d time.Duration) {
	contended.Lock()
	spin(d)
	contended.Unlock()
}

// contend has LOCKERS goroutines take one mutex ROUNDS times each, holding it
// 1 ms: the mutex profile (every contention recorded) names holdLock.
func contend() {
	const lockers, rounds = 4, 25
	var wg sync.WaitGroup
	for g := 0; g < lockers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				holdLock(time.Millisecond)
			}
		}()
	}
	wg.Wait()
}

// parked goroutines wait in parkForever until the program ends: the goroutine
// profile counts them.
var parkCh = make(chan struct{})

const parked = 20

//go:noinline
func parkForever() { <-parkCh }

//go:noinline
func retainHeap() {
	for i := 0; i < 2048; i++ {
		b := make([]byte, 8192)
		b[0] = byte(i)
		kept = append(kept, b)
	}
}

// appName is the SDK's form: the name, then the labels sorted by key in braces.
func appName(app string, tags map[string]string) string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+tags[k])
	}
	return app + "{" + strings.Join(parts, ",") + "}"
}

// push uploads one profile as the SDK does; it returns the HTTP status.
func push(base, token, name string, from, until time.Time, sampleRate int,
	units, agg string, profile []byte, types map[string]*sampleType) (int, error) {
	body := &bytes.Buffer{}
	w := multipart.NewWriter(body)
	fw, err := w.CreateFormFile("profile", "profile.pprof")
	if err != nil {
		return 0, err
	}
	if _, err = fw.Write(profile); err != nil {
		return 0, err
	}
	if types != nil {
		fw, err = w.CreateFormFile("sample_type_config", "sample_type_config.json")
		if err != nil {
			return 0, err
		}
		b, err := json.Marshal(types)
		if err != nil {
			return 0, err
		}
		if _, err = fw.Write(b); err != nil {
			return 0, err
		}
	}
	if err = w.Close(); err != nil {
		return 0, err
	}
	u, err := url.Parse(base)
	if err != nil {
		return 0, err
	}
	q := u.Query()
	q.Set("name", name)
	q.Set("from", strconv.FormatInt(from.UnixNano(), 10))
	q.Set("until", strconv.FormatInt(until.UnixNano(), 10))
	q.Set("spyName", "gospy")
	q.Set("sampleRate", strconv.Itoa(sampleRate))
	q.Set("units", units)
	q.Set("aggregationType", agg)
	u.Path = strings.TrimSuffix(u.Path, "/") + "/ingest"
	u.RawQuery = q.Encode()
	req, err := http.NewRequest(http.MethodPost, u.String(), body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(os.Stderr, "pushpprof: %s answered %d: %s\n", u.Path, resp.StatusCode,
			strings.TrimSpace(string(answer)))
	}
	return resp.StatusCode, nil
}

func main() {
	base := flag.String("url", "", "the collector's base URL")
	token := flag.String("token", "", "the ingest token")
	app := flag.String("app", "pushpprof", "the application name")
	out := flag.String("out", "", "directory for the pushed profiles")
	cpuMs := flag.Int("cpu-ms", 2000, "milliseconds of the 3:1 workload")
	flag.Parse()
	if *base == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: pushpprof -url URL -token TOKEN -app NAME -out DIR [-cpu-ms MS]")
		os.Exit(2)
	}
	// every 4 KiB allocated is a sample: the 8 KiB slices are all in the profile
	runtime.MemProfileRate = 4096
	name := appName(*app, map[string]string{
		"process.runtime.name":    "go",
		"process.runtime.version": runtime.Version(),
		"otel.scope.name":         "com.grafana.pyroscope/go",
		"workload":                "shape31",
	})

	from := time.Now()
	var cpu bytes.Buffer
	if err := pprof.StartCPUProfile(&cpu); err != nil {
		fmt.Fprintln(os.Stderr, "pushpprof: cpu profile:", err)
		os.Exit(1)
	}
	retainHeap()
	for end := time.Now().Add(time.Duration(*cpuMs) * time.Millisecond); time.Now().Before(end); {
		burnThree()
		burnOne()
	}
	pprof.StopCPUProfile()
	cpuUntil := time.Now()

	runtime.GC()
	var heap bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&heap, 0); err != nil {
		fmt.Fprintln(os.Stderr, "pushpprof: heap profile:", err)
		os.Exit(1)
	}
	runtime.KeepAlive(kept)

	runtime.SetMutexProfileFraction(1)
	contend()
	var mutex bytes.Buffer
	if err := pprof.Lookup("mutex").WriteTo(&mutex, 0); err != nil {
		fmt.Fprintln(os.Stderr, "pushpprof: mutex profile:", err)
		os.Exit(1)
	}
	for i := 0; i < parked; i++ {
		go parkForever()
	}
	for runtime.NumGoroutine() < parked+1 {
		runtime.Gosched()
	}
	var goroutines bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&goroutines, 0); err != nil {
		fmt.Fprintln(os.Stderr, "pushpprof: goroutine profile:", err)
		os.Exit(1)
	}
	until := time.Now()

	profiles := map[string][]byte{"cpu.pprof": cpu.Bytes(), "heap.pprof": heap.Bytes(),
		"mutex.pprof": mutex.Bytes(), "goroutine.pprof": goroutines.Bytes()}
	for file, data := range profiles {
		if err := os.WriteFile(filepath.Join(*out, file), data, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "pushpprof:", err)
			os.Exit(1)
		}
	}
	status := func(code int, err error) int {
		if err != nil {
			fmt.Fprintln(os.Stderr, "pushpprof: push:", err)
		}
		return code
	}
	// the CPU job of the SDK: units and aggregation in the query, no type config
	cpuStatus := status(push(*base, *token, name, from, cpuUntil, 100, "samples", "sum",
		cpu.Bytes(), nil))
	// godeltaprof's jobs: the types' units and aggregation in sample_type_config
	heapStatus := status(push(*base, *token, name, from, until, 100, "", "",
		heap.Bytes(), heapTypes))
	mutexStatus := status(push(*base, *token, name, from, until, 0, "", "",
		mutex.Bytes(), mutexTypes))
	// the goroutines job: units and aggregation in the query and in the config
	goroutineStatus := status(push(*base, *token, name, from, until, 0, "goroutines", "average",
		goroutines.Bytes(), goroutineTypes))
	fmt.Printf("{\"from\":%d,\"until\":%d,\"cpu_status\":%d,\"heap_status\":%d,"+
		"\"mutex_status\":%d,\"goroutine_status\":%d,\"parked\":%d}\n",
		from.Unix(), until.Unix()+1, cpuStatus, heapStatus, mutexStatus, goroutineStatus,
		parked)
	if cpuStatus != http.StatusOK || heapStatus != http.StatusOK ||
		mutexStatus != http.StatusOK || goroutineStatus != http.StatusOK {
		os.Exit(1)
	}
}
