package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// buildRobby builds robby's command from the repository that holds dir
// into out, with the race detector if race.
func buildRobby(ctx context.Context, dir, out string, race bool) error {
	root, err := repoRoot(dir)
	if err != nil {
		return err
	}
	args := []string{"build", "-o", out}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "./cmd/robby")...)
	cmd.Dir = root
	// The repository's go.work builds cmd/robby with robby's own packages.
	cmd.Env = append(os.Environ(), "GOWORK=")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/robby: %v\n%s", err, b)
	}
	return nil
}

// repoRoot finds the directory above dir that holds go.work.
func repoRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.work above %s: run load from robby's repository, or give -robby", dir)
		}
	}
}

// A robbyProc is a running robby serve.
type robbyProc struct {
	cmd    *exec.Cmd
	URL    string // the endpoint's base URL, ending in /v1
	pprof  string // the base URL of its profiles
	stderr *lockedBuffer
	exited chan struct{}
}

var (
	servingRe  = regexp.MustCompile(`on (http://\S+/v1)`)
	profilesRe = regexp.MustCompile(`profiles at (http://\S+/debug/pprof/)`)
)

// startRobby starts bin serve with args, on a free loopback port with its
// profiles on another, and waits until it serves.
func startRobby(bin string, args ...string) (*robbyProc, error) {
	cmd := exec.Command(bin, append([]string{"serve", "-addr", "127.0.0.1:0", "-pprof", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=", "ROBBY_TOKEN=")
	p := &robbyProc{cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { cmd.Wait(); close(p.exited) }()
	deadline := time.After(time.Minute)
	for {
		out := p.stderr.String()
		serving, profiles := servingRe.FindStringSubmatch(out), profilesRe.FindStringSubmatch(out)
		if serving != nil && profiles != nil {
			p.URL, p.pprof = serving[1], profiles[1]
			return p, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("robby serve exited: %s", out)
		case <-deadline:
			p.kill()
			return nil, fmt.Errorf("robby serve did not start in a minute: %s", out)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (p *robbyProc) kill() {
	p.cmd.Process.Kill()
	<-p.exited
}

// stop sends SIGTERM and waits for robby serve to exit. It fails if robby
// exits with an error (a data race found, say).
func (p *robbyProc) stop() error {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		p.kill()
		return fmt.Errorf("robby serve did not stop in a minute: %s", p.stderr.String())
	}
	if !p.cmd.ProcessState.Success() {
		return fmt.Errorf("robby serve: %v: %s", p.cmd.ProcessState, p.stderr.String())
	}
	return nil
}

// rss returns the process's resident memory in bytes.
func (p *robbyProc) rss() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc/PID/status")
}

// cpu returns the CPU time the process has used, user and system.
func (p *robbyProc) cpu() (time.Duration, error) {
	return procCPU(p.cmd.Process.Pid)
}

// procCPU returns the CPU time process pid has used: utime and stime of
// /proc/PID/stat, the 14th and 15th fields, counted in the kernel's clock
// ticks for user space, 100 a second on Linux (USER_HZ).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command's name, the 2nd field, may hold spaces: the others follow
	// its closing parenthesis.
	line := string(b)
	var fields []string
	if i := strings.LastIndexByte(line, ')'); i >= 0 {
		fields = strings.Fields(line[i+1:])
	}
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	var ticks int64
	for _, f := range fields[11:13] { // the 14th and 15th fields of the line
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100), nil
}

// goroutines returns the count of robby's goroutines, from its profiles.
func (p *robbyProc) goroutines(ctx context.Context) (int, error) {
	body, err := p.profile(ctx, "goroutine?debug=1")
	if err != nil {
		return 0, err
	}
	defer body.Close()
	line, _ := bufio.NewReader(body).ReadString('\n')
	n, ok := strings.CutPrefix(strings.TrimSpace(line), "goroutine profile: total ")
	if !ok {
		return 0, fmt.Errorf("goroutine profile begins %q", line)
	}
	return strconv.Atoi(n)
}

// profile fetches one of robby's profiles.
func (p *robbyProc) profile(ctx context.Context, name string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.pprof+name, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("profile %s: %s", name, resp.Status)
	}
	return resp.Body, nil
}

// saveProfiles saves robby's CPU, block and mutex profiles and its execution
// trace over the next seconds into dir, as cpu.pprof, block.pprof,
// mutex.pprof and trace.out. It returns at once; wait waits for the files.
func (p *robbyProc) saveProfiles(ctx context.Context, dir string, seconds int) (wait func() error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return func() error { return err }
	}
	var wg sync.WaitGroup
	files := map[string]string{"profile": "cpu.pprof", "block": "block.pprof", "mutex": "mutex.pprof", "trace": "trace.out"}
	errs := make(chan error, len(files))
	for name, file := range files {
		wg.Go(func() {
			errs <- p.saveProfile(ctx, fmt.Sprintf("%s?seconds=%d", name, seconds), filepath.Join(dir, file))
		})
	}
	return func() error {
		wg.Wait()
		close(errs)
		var err error
		for e := range errs {
			err = errors.Join(err, e)
		}
		return err
	}
}

func (p *robbyProc) saveProfile(ctx context.Context, name, path string) error {
	body, err := p.profile(ctx, name)
	if err != nil {
		return err
	}
	defer body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, body)
	return errors.Join(err, f.Close())
}

// A lockedBuffer is a strings.Builder safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
