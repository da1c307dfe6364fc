// The client of tools/feed-fanout (Go standard library only): opens N Server-Sent
// Events subscribers on GET /v1/events, appends at a fixed rate with
// POST /v1/users/{u}/devices/d1/access, and checks that every subscriber received
// every appended event, once and in order. Prints one JSON document.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var (
	base        = flag.String("url", "", "server URL")
	token       = os.Getenv("FANOUT_TOKEN")
	subscribers = flag.Int("subscribers", 1000, "SSE subscribers")
	rate        = flag.Int("rate", 2000, "appends per second")
	duration    = flag.Float64("duration", 5, "seconds of appending")
	users       = flag.Int("users", 100, "users seeded (one device each)")
	appenders   = flag.Int("appenders", 64, "concurrent append connections")
	serverPID   = flag.Int("server-pid", 0, "server process (for its RSS)")
	sample      = flag.Int("sample", 10, "lag is measured on every Nth event")
	drain       = flag.Float64("drain", 120, "seconds to wait for subscribers to receive everything")
)

func fail(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "feed-fanout: "+format+"\n", a...)
	os.Exit(1)
}

func request(c *http.Client, method, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, *base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func rssKB(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field+":") {
			f := strings.Fields(line)
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	return -1
}

type subscriber struct {
	received int64 // events received (atomic)
	errMsg   string
	// recv[k] = arrival (ns since start) of the k-th sampled event
	recv []int64
}

func main() {
	flag.Parse()
	start := time.Now()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *appenders + 8, MaxConnsPerHost: 0}, Timeout: 60 * time.Second}

	// Seed the users (one device each); the head is the last registration's seq.
	var first int64 = 1
	for i := 0; i < *users; i++ {
		st, b, err := request(client, "POST", fmt.Sprintf("/v1/users/f%04d/devices", i), []byte(`{"deviceId":"d1","name":"Fanout device","kind":"mobile"}`))
		if err != nil || st != 201 {
			fail("seeding f%04d: %v %d %s", i, err, st, b)
		}
		var r struct{ Events []struct{ Seq int64 } }
		if json.Unmarshal(b, &r) != nil || len(r.Events) == 0 {
			fail("seeding f%04d: no seq in %s", i, b)
		}
		first = r.Events[len(r.Events)-1].Seq + 1
	}
	total := int64(float64(*rate) * *duration)
	last := first + total - 1
	samples := int(total) / *sample + 1

	// Open the subscribers, each on its own connection.
	subs := make([]*subscriber, *subscribers)
	var connected sync.WaitGroup
	var done sync.WaitGroup
	connected.Add(*subscribers)
	done.Add(*subscribers)
	conns := make([]net.Conn, *subscribers)
	host := strings.TrimPrefix(*base, "http://")
	for k := range subs {
		s := &subscriber{recv: make([]int64, samples)}
		subs[k] = s
		go func(k int, s *subscriber) {
			defer done.Done()
			ok := false
			defer func() {
				if !ok {
					connected.Done()
				}
			}()
			c, err := net.Dial("tcp", host)
			if err != nil {
				s.errMsg = err.Error()
				return
			}
			conns[k] = c
			fmt.Fprintf(c, "GET /v1/events?from=%d HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", first, host, token)
			r := bufio.NewReaderSize(c, 64*1024)
			status, err := r.ReadString('\n')
			if err != nil || !strings.Contains(status, " 200 ") {
				s.errMsg = fmt.Sprintf("status %q %v", status, err)
				return
			}
			chunked := false
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					s.errMsg = err.Error()
					return
				}
				if strings.HasPrefix(strings.ToLower(line), "transfer-encoding: chunked") {
					chunked = true
				}
				if line == "\r\n" {
					break
				}
			}
			var body *bufio.Reader = r
			if chunked {
				body = bufio.NewReaderSize(newChunked(r), 64*1024)
			}
			expect := first
			for {
				line, err := body.ReadSlice('\n')
				if err != nil {
					s.errMsg = fmt.Sprintf("after %d events: %v", expect-first, err)
					return
				}
				if bytes.HasPrefix(line, []byte(": connected")) && !ok {
					ok = true
					connected.Done()
					continue
				}
				if !bytes.HasPrefix(line, []byte("id: ")) {
					continue
				}
				seq, err := strconv.ParseInt(string(bytes.TrimSpace(line[4:])), 10, 64)
				if err != nil || seq != expect {
					s.errMsg = fmt.Sprintf("expected id %d, got %q", expect, line)
					return
				}
				if (seq-first)%int64(*sample) == 0 {
					s.recv[(seq-first)/int64(*sample)] = time.Since(start).Nanoseconds()
				}
				atomic.AddInt64(&s.received, 1)
				expect++
				if seq == last {
					return
				}
			}
		}(k, s)
	}
	connected.Wait()
	for k, s := range subs {
		if s.errMsg != "" {
			fail("subscriber %d did not connect: %s", k, s.errMsg)
		}
	}
	rssBefore := rssKB(*serverPID, "VmRSS")

	// Append at the rate: one request per event, spread over the appender connections.
	sent := make([]int64, samples) // send time of sampled seqs
	var sentMu sync.Mutex
	var appended, failures int64
	jobs := make(chan int, total)
	var wg sync.WaitGroup
	var appendStart time.Time
	for a := 0; a < *appenders; a++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				t := time.Since(start).Nanoseconds()
				st, b, err := request(client, "POST", fmt.Sprintf("/v1/users/f%04d/devices/d1/access", i%*users), nil)
				if err != nil || st != 200 {
					atomic.AddInt64(&failures, 1)
					fmt.Fprintf(os.Stderr, "feed-fanout: append: %v %d %s\n", err, st, b)
					continue
				}
				var r struct{ Events []struct{ Seq int64 } }
				if json.Unmarshal(b, &r) == nil && len(r.Events) == 1 {
					seq := r.Events[0].Seq
					if seq >= first && seq <= last && (seq-first)%int64(*sample) == 0 {
						sentMu.Lock()
						sent[(seq-first)/int64(*sample)] = t
						sentMu.Unlock()
					}
				}
				atomic.AddInt64(&appended, 1)
			}
		}()
	}
	appendStart = time.Now()
	interval := time.Second / time.Duration(*rate)
	var peakRSS int64
	for i := int64(0); i < total; i++ {
		// Paced by the clock (not by a ticker, which drops ticks when late).
		due := appendStart.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		jobs <- int(i)
		if i%int64(*rate/4+1) == 0 {
			if r := rssKB(*serverPID, "VmRSS"); r > peakRSS {
				peakRSS = r
			}
		}
	}
	close(jobs)
	wg.Wait()
	appendSeconds := time.Since(appendStart).Seconds()

	// Wait for the subscribers to receive everything (or the drain time to pass).
	finished := make(chan struct{})
	go func() { done.Wait(); close(finished) }()
	timedOut := false
	ticker := time.NewTicker(250 * time.Millisecond)
	deadline := time.After(time.Duration(*drain * float64(time.Second)))
loop:
	for {
		select {
		case <-finished:
			break loop
		case <-ticker.C:
			if r := rssKB(*serverPID, "VmRSS"); r > peakRSS {
				peakRSS = r
			}
		case <-deadline:
			timedOut = true
			break loop
		}
	}
	deliverSeconds := time.Since(appendStart).Seconds()
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}

	var delivered int64
	complete := 0
	problems := []string{}
	var lags []float64
	for k, s := range subs {
		n := atomic.LoadInt64(&s.received)
		delivered += n
		if n == total {
			complete++
		} else if len(problems) < 5 {
			problems = append(problems, fmt.Sprintf("subscriber %d: %d of %d events (%s)", k, n, total, s.errMsg))
		}
		for j, r := range s.recv {
			if r > 0 && sent[j] > 0 {
				lags = append(lags, float64(r-sent[j])/1e6)
			}
		}
	}
	sort.Float64s(lags)
	pct := func(p float64) float64 {
		if len(lags) == 0 {
			return -1
		}
		return float64(int(lags[int(p*float64(len(lags)-1))]*100)) / 100
	}
	out := map[string]interface{}{
		"subscribers":             *subscribers,
		"events":                  total,
		"target_append_per_s":     *rate,
		"appended":                appended,
		"append_failures":         failures,
		"append_per_s":            float64(int(float64(appended)/appendSeconds*10)) / 10,
		"subscribers_complete":    complete,
		"delivered":               delivered,
		"delivered_expected":      total * int64(*subscribers),
		"delivered_per_s":         float64(int(float64(delivered)/deliverSeconds*10)) / 10,
		"lag_ms_p50":              pct(0.50),
		"lag_ms_p99":              pct(0.99),
		"lag_ms_max":              pct(1.0),
		"lag_samples":             len(lags),
		"server_rss_mb_connected": float64(rssBefore) / 1024,
		"server_rss_mb_peak":      float64(peakRSS) / 1024,
		"server_hwm_mb":           float64(rssKB(*serverPID, "VmHWM")) / 1024,
		"drain_timed_out":         timedOut,
		"problems":                problems,
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	enc.Encode(out)
	if complete != *subscribers || failures > 0 {
		os.Exit(1)
	}
}

// chunked decodes an HTTP/1.1 chunked body.
type chunked struct {
	r    *bufio.Reader
	left int64
}

func newChunked(r *bufio.Reader) *chunked { return &chunked{r: r} }

func (c *chunked) Read(p []byte) (int, error) {
	if c.left == 0 {
		line, err := c.r.ReadString('\n')
		if err != nil {
			return 0, err
		}
		if line == "\r\n" {
			line, err = c.r.ReadString('\n')
			if err != nil {
				return 0, err
			}
		}
		n, err := strconv.ParseInt(strings.TrimSpace(strings.SplitN(line, ";", 2)[0]), 16, 64)
		if err != nil {
			return 0, fmt.Errorf("bad chunk size %q", line)
		}
		if n == 0 {
			return 0, io.EOF
		}
		c.left = n
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}
