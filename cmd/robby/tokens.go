package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
)

// serveTokens are the bearer tokens robby serve accepts, each mapped to
// its user. The tokens never appear in an error or a log.
type serveTokens map[string]string

// add takes "USER:TOKEN", or a bare "TOKEN" of the user "". The part before the
// first colon is the user, so a bare token holds no colon.
func (t serveTokens) add(v, where string) error {
	user, token, ok := strings.Cut(strings.TrimSpace(v), ":")
	if !ok {
		user, token = "", user
	}
	switch {
	case token == "":
		return fmt.Errorf("%s: an empty token", where)
	case ok && user == "":
		return fmt.Errorf("%s: an empty user name before the colon", where)
	}
	if had, dup := t[token]; dup && had != user {
		return fmt.Errorf("%s: a token already given to another user", where)
	}
	t[token] = user
	return nil
}

// readFile adds the tokens of a file, one "USER:TOKEN" or "TOKEN" a line. Blank
// lines and lines starting with # are skipped.
func (t serveTokens) readFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("-token-file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	read := 0
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := t.add(line, fmt.Sprintf("-token-file %s, line %d", path, n)); err != nil {
			return err
		}
		read++
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("-token-file %s: %w", path, err)
	}
	if read == 0 {
		return errors.New("-token-file " + path + ": no token in the file")
	}
	return nil
}
