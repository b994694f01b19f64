package skills

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
)

// ErrOutside is the error of a path that leads out of its skill's folder:
// through "..", an absolute path, or a symbolic link.
var ErrOutside = errors.New("skills: the path leads out of the skill's folder")

// maxLinks bounds the symbolic links followed in one path, as a system's
// ELOOP does.
const maxLinks = 40

// resolve returns where name, a path in the folder dir of fsys, leads once
// every symbolic link in it is followed, as a path of fsys. It refuses a
// path that leaves dir on the way: the model names the path, and a skill
// written by someone else holds the links.
func resolve(fsys fs.FS, dir, name string) (string, error) {
	if name == "" || path.IsAbs(name) || strings.Contains(name, `\`) {
		return "", fmt.Errorf("%w: %q", ErrOutside, name)
	}
	rel := path.Clean(name)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%w: %q", ErrOutside, name)
	}
	links, _ := fsys.(fs.ReadLinkFS)
	done, todo := "", strings.Split(rel, "/")
	for hops := 0; len(todo) > 0; {
		part := todo[0]
		todo = todo[1:]
		if part == "." {
			continue
		}
		next := path.Join(done, part)
		if strings.HasPrefix(next, "..") {
			return "", fmt.Errorf("%w: %q", ErrOutside, name)
		}
		if links == nil {
			done = next
			continue
		}
		info, err := links.Lstat(path.Join(dir, next))
		if err != nil || info.Mode()&fs.ModeSymlink == 0 {
			done = next // a missing file is Open's to report
			continue
		}
		if hops++; hops > maxLinks {
			return "", fmt.Errorf("skills: %q: too many symbolic links", name)
		}
		target, err := links.ReadLink(path.Join(dir, next))
		if err != nil {
			return "", fmt.Errorf("skills: %w", err)
		}
		if path.IsAbs(target) {
			return "", fmt.Errorf("%w: %q links to %s", ErrOutside, name, target)
		}
		todo = append(strings.Split(path.Join(path.Dir(next), target), "/"), todo...)
		done = ""
	}
	if done == "" {
		done = "."
	}
	return path.Join(dir, done), nil
}

// readFile returns the file at name in the folder dir of fsys, confined to
// dir, and at most MaxFileSize bytes.
func readFile(fsys fs.FS, dir, name string) ([]byte, error) {
	p, err := resolve(fsys, dir, name)
	if err != nil {
		return nil, err
	}
	f, err := fsys.Open(p)
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("skills: %s is not a file", name)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("skills: %s is larger than %d bytes", name, MaxFileSize)
	}
	return b, nil
}

// files lists the files of the skill in dir, SKILL.md left out, at most
// maxListed of them. Links are not followed: the listing stays in dir.
func files(fsys fs.FS, dir string) (list []string, more bool) {
	_ = fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel := strings.TrimPrefix(p, dir+"/")
		if rel == "SKILL.md" {
			return nil
		}
		if len(list) == maxListed {
			more = true
			return fs.SkipAll
		}
		list = append(list, rel)
		return nil
	})
	return list, more
}
