// Command netexec is the e2e tests' HTTP server, a small part of upstream's agnhost netexec
// (the test image upstream's e2e tests run): berth's tests cannot pull agnhost, and a busybox
// httpd CGI script now and then took seconds to answer. It serves on --http-port:
//
//	/hostname          the pod's hostname
//	/echo?msg=M        M
//	/redirect?loc=URL  302 Found to URL, with agnhost's body
//	/write             appends the POSTed body and a newline to --write-file
//	/healthz           200
//
// With --lookup NAME it resolves NAME as a pod's programs do (Go's resolver reads the pod's
// resolv.conf: search path, ndots), prints the addresses one per line and exits. With
// --get URL it prints URL's body and exits, 1 on an error or a status other than 200 (a
// refused connection says "connection refused"), within --timeout, trusting --ca-file's
// certificates for https. With --poll URL it also GETs URL every --interval, each time on a
// new connection, and serves the counts of answers and failures at /poll (the rollout tests'
// client: a Service must answer every request while its pods are replaced).
package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"html"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

func main() {
	port := flag.Int("http-port", 8080, "the port to serve HTTP on")
	writeFile := flag.String("write-file", "/host/received", "the file /write appends to")
	lookup := flag.String("lookup", "", "resolve this name, print its addresses and exit")
	get := flag.String("get", "", "GET this URL, print the body and exit")
	timeout := flag.Duration("timeout", 5*time.Second, "how long --get may take")
	caFile := flag.String("ca-file", "", "with --get: trust only this PEM bundle")
	poll := flag.String("poll", "", "GET this URL every --interval while serving, counting failures")
	interval := flag.Duration("interval", 100*time.Millisecond, "how often --poll asks")
	flag.Parse()
	if *get != "" {
		client := &http.Client{Timeout: *timeout}
		if *caFile != "" {
			pem, err := os.ReadFile(*caFile)
			pool := x509.NewCertPool()
			if err != nil || !pool.AppendCertsFromPEM(pem) {
				fmt.Fprintln(os.Stderr, "reading --ca-file:", err)
				os.Exit(1)
			}
			client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
		}
		resp, err := client.Get(*get)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Print(string(body))
		if err != nil || resp.StatusCode != http.StatusOK {
			fmt.Fprintln(os.Stderr, resp.Status, err)
			os.Exit(1)
		}
		return
	}
	if *lookup != "" {
		addrs, err := net.LookupHost(*lookup)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for _, a := range addrs {
			fmt.Println(a)
		}
		return
	}

	var mu sync.Mutex
	mux := http.NewServeMux()
	mux.HandleFunc("/hostname", func(w http.ResponseWriter, r *http.Request) {
		name, _ := os.Hostname()
		fmt.Fprint(w, name)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.URL.Query().Get("msg"))
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		loc := r.URL.Query().Get("loc")
		if loc == "" {
			http.Error(w, "loc is required", http.StatusBadRequest)
			return
		}
		// http.Redirect writes the body `<a href="URL">Found</a>.` as agnhost's does.
		http.Redirect(w, r, loc, http.StatusFound)
	})
	mux.HandleFunc("/write", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(*writeFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = f.Write(append(body, '\n'))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			http.Error(w, html.EscapeString(err.Error()), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		name, _ := os.Hostname()
		fmt.Fprintf(w, "{%q: %q}\n", "Hostname", name)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {})
	if *poll != "" {
		p := &poller{}
		go p.run(*poll, *interval, *timeout)
		mux.HandleFunc("/poll", p.serve)
	}
	log.Printf("serving on :%d", *port)
	log.Fatal(http.ListenAndServe(fmt.Sprintf(":%d", *port), mux))
}

// poller counts the answers of one URL. Its report, at /poll, is one line:
// "ok N failed M" followed by the last failures, one a line.
type poller struct {
	mu       sync.Mutex
	ok, fail int
	last     []string
}

func (p *poller) run(url string, interval, timeout time.Duration) {
	// No kept-alive connections: each request goes through the Service's load balancing
	// again, as a new client's would.
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	for range time.Tick(interval) {
		err := func() error {
			resp, err := client.Get(url)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if _, err := io.ReadAll(resp.Body); err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("status %s", resp.Status)
			}
			return nil
		}()
		p.mu.Lock()
		if err == nil {
			p.ok++
		} else {
			p.fail++
			p.last = append(p.last, time.Now().Format(time.RFC3339Nano)+" "+err.Error())
			if len(p.last) > 10 {
				p.last = p.last[1:]
			}
			log.Printf("poll %s: %v", url, err)
		}
		p.mu.Unlock()
	}
}

func (p *poller) serve(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(w, "ok %d failed %d\n", p.ok, p.fail)
	for _, l := range p.last {
		fmt.Fprintln(w, l)
	}
}
