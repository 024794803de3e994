// A stdlib-only Go server for the Go-runtime source tests: GET /work allocates 8 MiB of garbage and keeps 1 MiB when
// LEAK=1; a 64 MiB ballast lives throughout (a steady heap big enough for a 2 % comparison); /memstats is the
// runtime's own MemStats (after a GC with ?gc=1); pprof and expvar are mounted.
// It listens on 127.0.0.1:0 and prints the port on its first stdout line.
package main

import (
	"encoding/json"
	_ "expvar"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"sync"
)

var (
	ballast = make([]byte, 64<<20)
	mu      sync.Mutex
	kept    [][]byte
	leak    = os.Getenv("LEAK") == "1"
)

func touch(buf []byte) {
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = byte(i)
	}
}

func work(w http.ResponseWriter, r *http.Request) {
	for i := 0; i < 8; i++ {
		touch(make([]byte, 1<<20))
	}
	buf := make([]byte, 1<<20)
	touch(buf)
	if leak {
		mu.Lock()
		kept = append(kept, buf)
		mu.Unlock()
	}
	fmt.Fprintln(w, "ok", len(ballast) > 0)
}

func memstats(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("gc") == "1" {
		runtime.GC()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	json.NewEncoder(w).Encode(map[string]uint64{"HeapAlloc": m.HeapAlloc, "HeapInuse": m.HeapInuse, "Sys": m.Sys,
		"NumGC": uint64(m.NumGC)})
}

func main() {
	touch(ballast)
	http.HandleFunc("/work", work)
	http.HandleFunc("/memstats", memstats)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	panic(http.Serve(ln, nil))
}
