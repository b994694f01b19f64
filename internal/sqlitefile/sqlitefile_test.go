package sqlitefile

import (
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"
)

// Every name below is the file the driver writes, byte for byte: nothing
// of it is read as a query, a fragment or an escape.
func TestURINamesTheFileItself(t *testing.T) {
	names := []string{"what?.db", "notes#1.db", "100%41.db", "a b.db", "x?mode=ro.db", "ünï €.db",
		":memory:", "a;b=c&d.db", "file:x.db", "%3F.db"}
	dir := t.TempDir()
	for _, name := range names {
		path := filepath.Join(dir, name)
		uri, err := URI(path, url.Values{"_pragma": {"busy_timeout(1000)"}})
		require.NoError(t, err)
		db, err := sql.Open("sqlite", uri)
		require.NoError(t, err)
		_, err = db.Exec(`CREATE TABLE t(x)`)
		require.NoError(t, err, name)
		var timeout int
		require.NoError(t, db.QueryRow(`PRAGMA busy_timeout`).Scan(&timeout))
		assert.Equal(t, 1000, timeout, "the query still applies")
		require.NoError(t, db.Close())
		_, err = os.Stat(path)
		assert.NoError(t, err, "%q is written to itself", name)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	assert.ElementsMatch(t, names, got, "no other file is written")
}

func TestURI(t *testing.T) {
	uri, err := URI("/tmp/what?.db", url.Values{"_txlock": {"immediate"}})
	require.NoError(t, err)
	assert.Equal(t, "file:///tmp/what%3F.db?_txlock=immediate", uri)
	_, err = URI("", nil)
	assert.Error(t, err)
}
