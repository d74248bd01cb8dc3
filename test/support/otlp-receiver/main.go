// A minimal OTLP/HTTP trace receiver for the tests: it decodes each export request with the OpenTelemetry
// Collector's own data model (go.opentelemetry.io/collector/pdata, the decoder the Collector's otlpreceiver uses),
// so an export that is not valid OTLP is refused with 400 as the Collector would, and appends every accepted
// request, re-encoded as OTLP JSON, as one line to the output file the test reads.
// It decodes with ptrace's (un)marshalers rather than ptraceotlp's ExportRequest: an ExportTraceServiceRequest and
// a TracesData are the same message on the wire (field 1, resource_spans), as the Collector's own receiver relies
// on, and ptrace does not pull in gRPC, which halves what a cold first build compiles.
//
// Usage: otlp-receiver -listen 127.0.0.1:0 -out spans.jsonl   (prints "listening on HOST:PORT" once ready)
//
// Two flags play a collector's answers that an exporter must handle: -require-header "Name: value" refuses with 401
// every request without that header (an authenticated collector), and -unavailable N answers the first N requests
// 503 with Retry-After: 0 (a collector under load), counting them in -out as lines {"refused":503}.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

const maxBody = 8 << 20

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	out := flag.String("out", "spans.jsonl", "file the accepted export requests are appended to (one JSON line each)")
	requireHeader := flag.String("require-header", "", `refuse requests without this header ("Name: value") with 401`)
	unavailable := flag.Int64("unavailable", 0, "answer the first N requests 503 with Retry-After: 0")
	flag.Parse()
	requiredName, requiredValue, _ := strings.Cut(*requireHeader, ":")
	requiredName, requiredValue = strings.TrimSpace(requiredName), strings.TrimSpace(requiredValue)
	var refused atomic.Int64

	file, err := os.OpenFile(*out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var mu sync.Mutex
	http.HandleFunc("/v1/traces", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		if requiredName != "" && r.Header.Get(requiredName) != requiredValue {
			http.Error(w, "unauthenticated", http.StatusUnauthorized)
			return
		}
		if refused.Add(1) <= *unavailable {
			mu.Lock()
			_, _ = file.Write([]byte("{\"refused\":503}\n"))
			mu.Unlock()
			w.Header().Set("Retry-After", "0")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var traces ptrace.Traces
		contentType := r.Header.Get("Content-Type")
		switch {
		case strings.HasPrefix(contentType, "application/json"):
			traces, err = (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(body)
		case strings.HasPrefix(contentType, "application/x-protobuf"):
			traces, err = (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(body)
		default:
			http.Error(w, "unsupported content type", http.StatusUnsupportedMediaType)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		line, err := (&ptrace.JSONMarshaler{}).MarshalTraces(traces)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		mu.Lock()
		_, err = file.Write(append(line, '\n'))
		mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		// ExportTraceServiceResponse with nothing rejected: its JSON form is an empty object.
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
	})
	listener, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s\n", listener.Addr())
	if err := http.Serve(listener, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
