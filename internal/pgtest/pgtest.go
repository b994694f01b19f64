// Package pgtest starts a real PostgreSQL server for tests, on a temporary data
// directory and a free port. It runs the binaries of Debian's postgresql
// package, or initdb and postgres on the PATH. Without them a test is skipped.
// Under CI=true, it fails.
package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A Server is a PostgreSQL server that lives as long as its test.
type Server struct {
	port int
	dbs  atomic.Int64
}

// bin returns the directory of initdb and postgres, or "" if there are
// none.
func bin() string {
	if dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin"); len(dirs) > 0 {
		return dirs[len(dirs)-1]
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

// Start starts a server that stops when tb ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	dir := bin()
	if dir == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatal("PostgreSQL is not installed (apt-get install postgresql)")
		}
		tb.Skip("PostgreSQL is not installed (apt-get install postgresql)")
	}
	// PostgreSQL refuses to run as root: run it as the postgres user.
	var cred *syscall.Credential
	data, err := os.MkdirTemp("", "pgtest")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(data) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			tb.Fatalf("running as root, PostgreSQL needs the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(data, uid, gid); err != nil {
			tb.Fatal(err)
		}
	}
	command := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(dir, name), args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		cmd.Dir = data
		return cmd
	}
	pgdata := filepath.Join(data, "data")
	if out, err := command("initdb", "-D", pgdata, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		tb.Fatalf("initdb: %v\n%s", err, out)
	}
	port := freePort(tb)
	srv := command("postgres", "-D", pgdata, "-p", strconv.Itoa(port), "-k", data,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=300")
	log, err := os.Create(filepath.Join(data, "log"))
	if err != nil {
		tb.Fatal(err)
	}
	srv.Stdout, srv.Stderr = log, log
	if err := srv.Start(); err != nil {
		tb.Fatalf("postgres: %v", err)
	}
	exited := make(chan struct{})
	go func() { srv.Wait(); close(exited) }()
	tb.Cleanup(func() {
		srv.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			srv.Process.Kill()
			<-exited
		}
		log.Close()
	})
	s := &Server{port: port}
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := pgx.Connect(context.Background(), s.dsn("postgres"))
		if err == nil {
			conn.Close(context.Background())
			return s
		}
		select {
		case <-exited:
			out, _ := os.ReadFile(log.Name())
			tb.Fatalf("postgres exited: %s", out)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("postgres did not accept connections: %v", err)
		}
	}
}

func freePort(tb testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (s *Server) dsn(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// NewDatabase creates an empty database and returns its connection
// string.
func (s *Server) NewDatabase(tb testing.TB) string {
	tb.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.dsn("postgres"))
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("test%d", s.dbs.Add(1))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatal(err)
	}
	return s.dsn(name)
}
