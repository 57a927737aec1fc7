package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
)

// listenProfiler serves Go's profiler (/debug/pprof/) on addr for the length of a long
// run such as a bulk index, so its heap and CPU can be looked at while it runs
// (go tool pprof http://ADDR/debug/pprof/heap). It returns the function that stops it.
// An address that cannot be listened on is an error before any work starts.
func listenProfiler(addr string, stderr io.Writer) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usagef("--pprof: %v", err)
	}
	mux := http.NewServeMux()
	handleProfiler(mux, func(h http.Handler) http.Handler { return h })
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	fmt.Fprintf(stderr, "profiler at http://%s/debug/pprof/\n", ln.Addr())
	return func() { srv.Close() }, nil
}

// handleProfiler registers Go's profiler under /debug/pprof/ on mux (less cmdline, which
// would show the command's flags), each handler wrapped by guard.
func handleProfiler(mux *http.ServeMux, guard func(http.Handler) http.Handler) {
	mux.Handle("/debug/pprof/", guard(http.HandlerFunc(pprof.Index)))
	mux.Handle("/debug/pprof/profile", guard(http.HandlerFunc(pprof.Profile)))
	mux.Handle("/debug/pprof/symbol", guard(http.HandlerFunc(pprof.Symbol)))
	mux.Handle("/debug/pprof/trace", guard(http.HandlerFunc(pprof.Trace)))
}
