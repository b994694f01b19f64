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

// AddDir indexes the Markdown, HTML and text files under dir (see [FormatOf]),
// walking it recursively. Hidden files and folders are left out. A document's
// ID is its path: dir joined with the path inside it, with forward slashes. Its
// metadata holds "path", "dir" (dir, cleaned) and "format". Files indexed
// before from the same dir that are gone now are deleted. Running AddDir again
// so brings the base up to date, re-indexing only what changed.
//
// Dir itself may be a symbolic link, which is followed. Links inside it are
// not, so the walk stays in the folder and ends. Dir may also name one file.
//
// A file that cannot be read or indexed (too large, unreadable, HTML the parser
// refuses) is skipped, and its old version kept. The error names it, joining a
// [DocumentError] for each. The others are indexed.
func (b *Base) AddDir(ctx context.Context, dir string) (Report, error) {
	var rep Report
	if b.isClosed() {
		return rep, ErrClosed
	}
	w := dirWalk{b: b, dir: dir, root: filepath.ToSlash(filepath.Clean(dir)), seen: map[string]bool{}, rep: &rep}
	err := w.walk(ctx)
	if err == nil {
		err = w.flush(ctx)
	}
	if err == nil {
		err = b.prune(ctx, w.root, w.seen, &rep)
	}
	if err == nil {
		b.write.Lock()
		err = b.embedMissing(ctx, &rep)
		b.write.Unlock()
	}
	if err != nil {
		return rep, fmt.Errorf("knowledge: add %s: %w", dir, err)
	}
	if len(w.errs) > 0 {
		return rep, fmt.Errorf("knowledge: add %s: %w", dir, errors.Join(w.errs...))
	}
	return rep, nil
}

// A dirWalk is the state of one AddDir.
type dirWalk struct {
	b         *Base
	dir, root string // as given; cleaned, with forward slashes
	batch     []Document
	seen      map[string]bool // the IDs of the files found
	errs      []error         // what was skipped
	rep       *Report
}

// walk reads the files under dir, the link followed if dir is one, into
// batches it adds.
func (w *dirWalk) walk(ctx context.Context) error {
	target, err := filepath.EvalSymlinks(w.dir)
	if err != nil {
		return err
	}
	return filepath.WalkDir(target, func(path string, d fs.DirEntry, err error) error {
		if rel, rerr := filepath.Rel(target, path); rerr == nil {
			path = filepath.Join(w.dir, rel) // as found under dir, not its target
		}
		if err != nil {
			if path == filepath.Clean(w.dir) {
				return err
			}
			w.errs = append(w.errs, err) // such as a folder that cannot be read
			return nil
		}
		if path != filepath.Clean(w.dir) && strings.HasPrefix(d.Name(), ".") {
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
		return w.file(ctx, path, d, format)
	})
}

// file reads one file into the batch, adding the batch when it is full.
func (w *dirWalk) file(ctx context.Context, path string, d fs.DirEntry, format Format) error {
	id := filepath.ToSlash(path)
	w.seen[id] = true // there: a failure to read it keeps its old version
	info, err := d.Info()
	if err == nil && info.Size() > MaxFileSize {
		err = fmt.Errorf("%d bytes, more than %d", info.Size(), MaxFileSize)
	}
	var data []byte
	if err == nil {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		if pe, ok := err.(*fs.PathError); ok {
			err = fmt.Errorf("%s: %w", pe.Op, pe.Err) // the ID names the path
		}
		w.rep.Skipped++
		w.errs = append(w.errs, &DocumentError{ID: id, Err: err})
		return nil
	}
	w.batch = append(w.batch, Document{ID: id, Text: string(data), Format: format,
		Metadata: map[string]string{"path": id, "dir": w.root, "format": string(format)}})
	if len(w.batch) == addDirBatch {
		return w.flush(ctx)
	}
	return nil
}

// flush adds the batch; a document of it that fails is skipped.
func (w *dirWalk) flush(ctx context.Context) error {
	if len(w.batch) == 0 {
		return nil
	}
	w.b.write.Lock()
	skipped, err := w.b.addLocked(ctx, w.batch, w.rep)
	w.b.write.Unlock()
	w.batch = w.batch[:0]
	w.errs = append(w.errs, skipped...)
	return err
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
