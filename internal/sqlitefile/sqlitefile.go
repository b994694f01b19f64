// Package sqlitefile turns a file path into the data source name that
// modernc.org/sqlite opens.
//
// The driver opens names as URIs. In "file:" + path, a '?' in the path starts
// the query and a '#' ends the name. So "what?.db" opened "what". URI escapes
// the path, so that a path is only ever a path.
package sqlitefile

import (
	"errors"
	"net/url"
	"path/filepath"
	"strings"
)

// URI returns the "file:" URI of the database at path, with query as its
// parameters (such as "_pragma"). The path is made absolute and
// percent-escaped. Every byte of it names the file, ":memory:" included.
func URI(path string, query url.Values) (string, error) {
	if path == "" {
		return "", errors.New("empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	abs = filepath.ToSlash(abs)
	if !strings.HasPrefix(abs, "/") {
		abs = "/" + abs // a Windows drive: file:///C:/dir/file.db
	}
	u := url.URL{Scheme: "file", Path: abs, RawQuery: query.Encode()}
	return u.String(), nil
}
