// testapp is the app every e2e pod runs in place of the images the stacks name: an HTTP server that
// reports what the pod gave it, so a test can check the pod spec made it into the container.
//
//	GET /<anything>          200, JSON: args, env, the request, the mounts it sees, /dev/shm's size
//	GET /healthz             200, or 503 once told to fail readiness
//	GET /control/ready?ok=false|true   fail (or pass again) /healthz
//	GET /control/log?n=3&text=hi&stream=stderr   write n lines (at most maxLines) to stdout or stderr
//	GET /control/exit?code=3 answer, then exit with that code
//	GET /control/fetch?port=9100   what http://127.0.0.1:9100/ answers (another container of the pod)
//
// It listens on --port, else $PORT (what Knative gives the user container), else 8080, on every address
// of the pod, in HTTP/1.1 and cleartext HTTP/2 (h2c). --fail-readiness starts it failing /healthz; --exit-after exits after a duration. Any
// other argument is accepted and only reported: the stacks' apps give their own images' arguments
// (--model, --index-dir, ...) and the test app stands in for all of them.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	maxLines      = 1000
	maxRelayBytes = 1 << 20
	defaultPort   = "8080"
	shmPath       = "/dev/shm"
)

type mount struct {
	Source     string `json:"source"`
	MountPoint string `json:"mountPoint"`
	FSType     string `json:"fsType"`
	Options    string `json:"options"`
}

func main() {
	opts, err := parseArgs(os.Args[1:])
	if err != nil {
		log.Fatalf("testapp: %v", err)
	}
	listen := opts.port
	if listen == "" {
		listen = os.Getenv("PORT")
	}
	if listen == "" {
		listen = defaultPort
	}
	var ready atomic.Bool
	ready.Store(!opts.failReadiness)
	if opts.exitAfter > 0 {
		time.AfterFunc(opts.exitAfter, func() {
			log.Printf("testapp: exiting after %s", opts.exitAfter)
			os.Exit(1)
		})
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if !ready.Load() {
			http.Error(w, "told to fail readiness", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/control/ready", func(w http.ResponseWriter, r *http.Request) {
		ok := r.URL.Query().Get("ok") != "false"
		ready.Store(ok)
		log.Printf("testapp: readiness set to %t", ok)
		fmt.Fprintf(w, "ready=%t\n", ok)
	})
	mux.HandleFunc("/control/log", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("n"))
		if err != nil || n < 1 || n > maxLines {
			http.Error(w, fmt.Sprintf("n must be 1..%d", maxLines), http.StatusBadRequest)
			return
		}
		out := os.Stdout
		if r.URL.Query().Get("stream") == "stderr" {
			out = os.Stderr
		}
		text := r.URL.Query().Get("text")
		for i := 1; i <= n; i++ {
			fmt.Fprintf(out, "%s %d\n", text, i)
		}
		fmt.Fprintf(w, "wrote %d lines\n", n)
	})
	mux.HandleFunc("/control/exit", func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(r.URL.Query().Get("code"))
		if err != nil || code < 0 || code > 255 {
			http.Error(w, "code must be 0..255", http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "exiting with %d\n", code)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		log.Printf("testapp: told to exit with %d", code)
		time.AfterFunc(100*time.Millisecond, func() { os.Exit(code) })
	})
	mux.HandleFunc("/control/fetch", func(w http.ResponseWriter, r *http.Request) {
		// Another container of the pod, reached on localhost (a sidecar): its answer, relayed.
		port, err := strconv.Atoi(r.URL.Query().Get("port"))
		if err != nil || port < 1 || port > 65535 {
			http.Error(w, "port must be 1..65535", http.StatusBadRequest)
			return
		}
		client := &http.Client{Timeout: 5 * time.Second}
		answer, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/from-a-neighbour", port))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer answer.Body.Close()
		w.Header().Set("Content-Type", answer.Header.Get("Content-Type"))
		w.WriteHeader(answer.StatusCode)
		_, _ = io.Copy(w, io.LimitReader(answer.Body, maxRelayBytes))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(report(r, ready.Load()))
	})

	log.Printf("testapp: listening on :%s, args %q", listen, os.Args[1:])
	server := &http.Server{Addr: ":" + listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	// HTTP/1.1 and cleartext HTTP/2 (h2c) on the one port: Knative's queue-proxy speaks h2c to a user
	// container whose port is named h2c, HTTP/1.1 otherwise.
	server.Protocols = new(http.Protocols)
	server.Protocols.SetHTTP1(true)
	server.Protocols.SetUnencryptedHTTP2(true)
	log.Fatal(server.ListenAndServe())
}

func report(r *http.Request, ready bool) map[string]any {
	hostname, _ := os.Hostname()
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	headers := map[string][]string{}
	for k, v := range r.Header {
		headers[k] = v
	}
	return map[string]any{
		"hostname": hostname,
		"uid":      os.Getuid(),
		"gid":      os.Getgid(),
		"command":  os.Args[0],
		"args":     os.Args[1:],
		"env":      env,
		"ready":    ready,
		"request": map[string]any{
			"method": r.Method, "host": r.Host, "uri": r.RequestURI, "proto": r.Proto,
			"remoteAddr": r.RemoteAddr, "headers": headers,
		},
		"mounts": mounts(),
		"shm":    shm(),
	}
}

// mounts are this container's, from /proc/self/mounts, sorted by mount point.
func mounts() []mount {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil
	}
	defer f.Close()
	var found []mount
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) >= 4 {
			found = append(found, mount{Source: fields[0], MountPoint: fields[1], FSType: fields[2], Options: fields[3]})
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].MountPoint < found[j].MountPoint })
	return found
}

// shm is the size of the filesystem at /dev/shm (64 MiB unless the pod mounts a memory emptyDir there).
func shm() map[string]any {
	var st syscall.Statfs_t
	if err := syscall.Statfs(shmPath, &st); err != nil {
		return map[string]any{"path": shmPath, "error": err.Error()}
	}
	return map[string]any{"path": shmPath, "sizeBytes": uint64(st.Blocks) * uint64(st.Bsize)}
}

type options struct {
	port          string
	failReadiness bool
	exitAfter     time.Duration
}

// parseArgs reads the three options in any of -name, --name, --name=value forms and ignores the rest.
func parseArgs(args []string) (options, error) {
	var opts options
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") {
			continue
		}
		next := func() (string, error) {
			if hasValue {
				return value, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s needs a value", args[i])
			}
			i++
			return args[i], nil
		}
		var err error
		switch name {
		case "port":
			opts.port, err = next()
		case "fail-readiness":
			opts.failReadiness = !hasValue || value == "true"
		case "exit-after":
			var text string
			if text, err = next(); err == nil {
				opts.exitAfter, err = time.ParseDuration(text)
			}
		}
		if err != nil {
			return opts, err
		}
	}
	return opts, nil
}
