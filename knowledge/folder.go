package knowledge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MaxFileSize bounds the files [Base.AddDir] reads; larger ones are
// reported and skipped.
const MaxFileSize = 16 << 20

// addDirBatch is how many files go into one transaction.
const addDirBatch = 64

// AddDir indexes the Markdown, HTML and text files under dir (see
// [FormatOf]), walking it recursively, hidden files and folders left out.
// A document's ID is its path (dir joined with the path inside it, with
// forward slashes); its metadata holds "path", "dir" (dir, cleaned) and
// "format". Files indexed before from the same dir that are gone now are
// deleted, so running AddDir again brings the base up to date, re-indexing
// only what changed.
//
// A file that cannot be read is skipped and reported in the error, which
// joins every such failure; the others are indexed.
func (b *Base) AddDir(ctx context.Context, dir string) (Report, error) {
	var rep Report
	if b.isClosed() {
		return rep, ErrClosed
	}
	root := filepath.ToSlash(filepath.Clean(dir))
	var (
		batch []Document
		seen  = map[string]bool{}
		errs  []error
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		b.write.Lock()
		err := b.addLocked(ctx, batch, &rep)
		b.write.Unlock()
		batch = batch[:0]
		return err
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return err
			}
			errs = append(errs, err)
			return nil
		}
		if path != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		format := FormatOf(path)
		if d.IsDir() || !d.Type().IsRegular() || format == "" {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		info, err := d.Info()
		if err == nil && info.Size() > MaxFileSize {
			err = fmt.Errorf("%s: %d bytes, more than %d", path, info.Size(), MaxFileSize)
		}
		var data []byte
		if err == nil {
			data, err = os.ReadFile(path)
		}
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		id := filepath.ToSlash(path)
		seen[id] = true
		batch = append(batch, Document{ID: id, Text: string(data), Format: format,
			Metadata: map[string]string{"path": id, "dir": root, "format": string(format)}})
		if len(batch) == addDirBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err == nil {
		err = b.prune(ctx, root, seen, &rep)
	}
	if err == nil {
		b.write.Lock()
		err = b.embedMissing(ctx, &rep)
		b.write.Unlock()
	}
	if err != nil {
		return rep, fmt.Errorf("knowledge: add %s: %w", dir, err)
	}
	if len(errs) > 0 {
		return rep, fmt.Errorf("knowledge: add %s: %w", dir, errors.Join(errs...))
	}
	return rep, nil
}

// prune deletes the documents of root that the walk did not see.
func (b *Base) prune(ctx context.Context, root string, seen map[string]bool, rep *Report) error {
	rows, err := b.db.QueryContext(ctx, `SELECT id FROM kb_documents WHERE json_extract(metadata, '$.dir') = ?`, root)
	if err != nil {
		return err
	}
	var gone []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		if !seen[id] {
			gone = append(gone, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(gone) == 0 {
		return err
	}
	n, err := b.Delete(ctx, gone...)
	rep.Deleted += n
	return err
}
