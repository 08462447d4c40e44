// The quiver server every test of this package talks to: one process of the binary named by
// QUIVER_BIN, on a free port of 127.0.0.1, with a temporary data directory, authentication on
// (root with the empty password of a first start).
package godriver

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// serverURL is the base URL of the running server, set by TestMain.
var serverURL string

// The server's last log lines, kept for the report of a failed start or run.
var serverLog = &logTail{max: 200}

func TestMain(m *testing.M) {
	os.Exit(runWithServer(m))
}

func runWithServer(m *testing.M) int {
	bin := os.Getenv("QUIVER_BIN")
	if bin == "" {
		fmt.Fprintln(os.Stderr, "QUIVER_BIN is not set: these tests start the real server; "+
			"build it (cargo build --bin quiver) and set QUIVER_BIN to the path of the quiver binary")
		return 1
	}
	if _, err := os.Stat(bin); err != nil {
		fmt.Fprintf(os.Stderr, "QUIVER_BIN=%s: %v\n", bin, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "quiver-go-driver-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temporary data directory:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	srv, err := startServer(bin, dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting %s: %v\n%s", bin, err, serverLog.String())
		return 1
	}
	serverURL = srv.url
	code := m.Run()
	if exit := srv.stop(); exit != nil {
		fmt.Fprintf(os.Stderr, "quiver did not stop cleanly: %v\n%s", exit, serverLog.String())
		if code == 0 {
			code = 1
		}
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "last lines of the server's log:\n%s", serverLog.String())
	}
	return code
}

type server struct {
	cmd  *exec.Cmd
	url  string
	done chan error
}

var listening = regexp.MustCompile(`listening on tcp://127\.0\.0\.1:(\d+)`)

// startServer runs `quiver serve` on port 0 and reads the port it chose from its log.
func startServer(bin, dataDir string) (*server, error) {
	cmd := exec.Command(bin, "serve",
		"--server.endpoint", "tcp://127.0.0.1:0",
		"--database.directory", dataDir,
		"--log.level", "warning")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	port := make(chan string, 1)
	// Reads the log to its end, so the pipe never fills and blocks the server.
	go func() {
		lines := bufio.NewScanner(out)
		lines.Buffer(make([]byte, 64*1024), 1024*1024)
		found := false
		for lines.Scan() {
			line := lines.Text()
			serverLog.add(line)
			if m := listening.FindStringSubmatch(line); m != nil && !found {
				found = true
				port <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, out)
		close(port)
	}()
	s := &server{cmd: cmd, done: make(chan error, 1)}
	select {
	case p, ok := <-port:
		if !ok {
			err := cmd.Wait()
			return nil, fmt.Errorf("the server exited before it listened: %v", err)
		}
		s.url = "http://127.0.0.1:" + p
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("the server did not report its endpoint within 30 s")
	}
	go func() { s.done <- cmd.Wait() }()
	return s, nil
}

// stop ends the server with SIGTERM (SIGKILL after 20 s) and returns how it exited.
func (s *server) stop() error {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		return err
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
		return fmt.Errorf("killed after 20 s without exiting on SIGTERM")
	}
}

// logTail keeps the last `max` lines.
type logTail struct {
	mu    sync.Mutex
	max   int
	lines []string
}

func (l *logTail) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	if len(l.lines) > l.max {
		l.lines = l.lines[len(l.lines)-l.max:]
	}
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n") + "\n"
}
