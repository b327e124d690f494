// The gRPC load generator of the operation × framing matrix (bench/matrix/): unary calls of one
// method whose request differs per call, which h2load cannot send (it repeats one body). Each
// call takes the next message of MESSAGES (pre-encoded protobuf, each preceded by its length as
// a 4-byte big-endian number), from index START on: a read or write cycles through its ids, a
// delete walks fresh ids and fails once they run out (WRAP=0). Every answer is checked: gRPC
// status OK and a message of one of LENGTHS bytes (any, when empty). CONNECTIONS HTTP/2
// connections carry STREAMS concurrent calls each, for SECONDS (or CALLS calls in all). Built
// offline against Debian's grpc-go sources like bench/peers/grpc_go/; the codec passes the
// bytes through, so no generated code is needed. Prints one JSON line.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

type rawCodec struct{}

func (rawCodec) Marshal(v interface{}) ([]byte, error) {
	if m, ok := v.([]byte); ok {
		return m, nil
	}
	return nil, fmt.Errorf("rawCodec cannot marshal %T", v)
}

func (rawCodec) Unmarshal(data []byte, v interface{}) error {
	m, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec cannot unmarshal into %T", v)
	}
	*m = append((*m)[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

type result struct {
	Requests     int     `json:"requests"`
	Seconds      float64 `json:"seconds"`
	Rps          float64 `json:"rps"`
	P50Ms        float64 `json:"p50Ms"`
	P99Ms        float64 `json:"p99Ms"`
	Failures     int     `json:"failures"`
	FirstFailure string  `json:"firstFailure"`
	// Messages taken (calls started), so the next run can start after them.
	Generated int `json:"generated"`
}

func envInt(name string, fallback int) int {
	value, err := strconv.Atoi(os.Getenv(name))
	if err != nil {
		return fallback
	}
	return value
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func readMessages(path string) [][]byte {
	data, err := os.ReadFile(path)
	if err != nil {
		fail("MESSAGES: %v", err)
	}
	var messages [][]byte
	for len(data) > 0 {
		if len(data) < 4 {
			fail("MESSAGES: truncated length")
		}
		n := int(binary.BigEndian.Uint32(data))
		if len(data) < 4+n {
			fail("MESSAGES: truncated message")
		}
		messages = append(messages, data[4:4+n])
		data = data[4+n:]
	}
	if len(messages) == 0 {
		fail("MESSAGES: no message")
	}
	return messages
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.999999) - 1
	if i < 0 {
		i = 0
	}
	return sorted[i]
}

func main() {
	messages := readMessages(os.Getenv("MESSAGES"))
	method := os.Getenv("METHOD")
	start := envInt("START", 0)
	wrap := os.Getenv("WRAP") != "0"
	connections := envInt("CONNECTIONS", 8)
	streams := envInt("STREAMS", 8)
	calls := envInt("CALLS", 0)
	seconds, _ := strconv.ParseFloat(os.Getenv("SECONDS"), 64)
	lengths := map[int]bool{}
	for _, s := range strings.Split(os.Getenv("LENGTHS"), ",") {
		if n, err := strconv.Atoi(s); err == nil {
			lengths[n] = true
		}
	}
	conns := make([]*grpc.ClientConn, connections)
	for i := range conns {
		conn, err := grpc.Dial(os.Getenv("TARGET"), grpc.WithInsecure(), grpc.WithBlock(),
			grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
		if err != nil {
			fail("dial: %v", err)
		}
		conns[i] = conn
	}

	var next int64
	var mu sync.Mutex
	var failures int
	firstFailure := ""
	record := func(text string) {
		mu.Lock()
		failures++
		if firstFailure == "" {
			firstFailure = text
		}
		mu.Unlock()
	}
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	began := time.Now()
	var lastEnd int64
	latencies := make([][]float64, connections*streams)
	var wg sync.WaitGroup
	for w := 0; w < connections*streams; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			conn := conns[w%connections]
			var answer []byte
			for {
				taken := int(atomic.AddInt64(&next, 1) - 1)
				if calls > 0 && taken >= calls || calls == 0 && !time.Now().Before(deadline) {
					atomic.AddInt64(&next, -1)
					return
				}
				index := start + taken
				if index >= len(messages) {
					if !wrap {
						record(fmt.Sprintf("ran out of messages: %d of them, from %d on", len(messages), start))
						return
					}
					index %= len(messages)
				}
				t0 := time.Now()
				err := conn.Invoke(context.Background(), method, messages[index], &answer)
				end := time.Now()
				if err != nil {
					s := status.Convert(err)
					record(fmt.Sprintf("call %d: %s %s", index, s.Code(), s.Message()))
					continue
				}
				if len(lengths) > 0 && !lengths[len(answer)] {
					record(fmt.Sprintf("call %d: answer of %d bytes", index, len(answer)))
					continue
				}
				latencies[w] = append(latencies[w], float64(end.Sub(t0).Microseconds())/1000)
				for {
					last := atomic.LoadInt64(&lastEnd)
					at := end.UnixNano()
					if at <= last || atomic.CompareAndSwapInt64(&lastEnd, last, at) {
						break
					}
				}
			}
		}(w)
	}
	wg.Wait()
	for _, conn := range conns {
		conn.Close()
	}
	var all []float64
	for _, l := range latencies {
		all = append(all, l...)
	}
	sort.Float64s(all)
	elapsed := float64(atomic.LoadInt64(&lastEnd)-began.UnixNano()) / 1e9
	r := result{
		Requests:     len(all),
		Seconds:      elapsed,
		P50Ms:        percentile(all, 50),
		P99Ms:        percentile(all, 99),
		Failures:     failures,
		FirstFailure: firstFailure,
		Generated:    int(atomic.LoadInt64(&next)),
	}
	if elapsed > 0 {
		r.Rps = float64(len(all)) / elapsed
	}
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
}
