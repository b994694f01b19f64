// Package skills gives an agent the skills of a folder, in the Agent Skills
// format: a folder per skill, holding a SKILL.md (YAML front matter with
// "name" and "description", then the instructions) and any files beside it.
// The format is the one of Claude's skills, also read by ADK, Genkit,
// OpenAI's and pydantic's agents and others.
//
// The system prompt lists each skill's name and description only
// ([Set.Prompt]). The model reads a skill's instructions when a task needs
// them, with the tool load_skill, and a file of the skill with
// read_skill_file ([Set.Tools]). A file is read from the skill's own folder
// only: no "..", no symbolic link out, at most [MaxFileSize] bytes.
//
// Robby never runs a skill's scripts. The model may read them; running one
// takes a tool of the program's that runs programs.
//
//	root, err := os.OpenRoot("skills")
//	...
//	set, err := skills.Load(root.FS()) // err names the skills skipped
//	agent, err := robby.New(robby.WithSystem("You help.\n\n"+set.Prompt()), robby.WithTools(set.Tools()...))
//
// What the model loaded is in the conversation, as the results of its tool
// calls: a continued or stored conversation keeps its loaded skills.
package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Bounds of what a skill may hold.
const (
	// MaxFileSize bounds a file read_skill_file returns, and a SKILL.md.
	MaxFileSize = 256 << 10
	// maxName and maxDescription are the Agent Skills format's bounds.
	maxName        = 64
	maxDescription = 1024
	// maxListed bounds the files load_skill lists.
	maxListed = 100
)

// A Skill is one skill: its name, its description and its folder.
type Skill struct {
	Name        string // as its front matter gives it
	Description string // when to use it, which the system prompt lists
	Dir         string // its folder, in the Set's file system

	instructions string // SKILL.md after its front matter
}

// A Set is the skills of a folder. It is immutable and safe for concurrent
// use.
type Set struct {
	fsys   fs.FS
	skills []Skill // sorted by name
}

// A SkillError is why the SKILL.md at Path was skipped.
type SkillError struct {
	Path string
	Err  error
}

func (e *SkillError) Error() string { return "skills: " + e.Path + ": " + e.Err.Error() }

func (e *SkillError) Unwrap() error { return e.Err }

// Load reads the skills of fsys: each folder at its top that holds a
// SKILL.md. Give it an [os.Root]'s FS for a folder on disk, so that no
// symbolic link leads out of it.
//
// A SKILL.md that cannot be read, has no front matter, or lacks a name or a
// description is skipped, as is a second skill of the same name. The error
// then joins a [*SkillError] naming each file skipped, and the Set holds the
// others. Only a folder that cannot be listed fails the whole Load.
func Load(fsys fs.FS) (*Set, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	set := &Set{fsys: fsys}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() && e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		file := path.Join(e.Name(), "SKILL.md")
		if _, err := fs.Stat(fsys, file); errors.Is(err, fs.ErrNotExist) {
			continue // a folder of something else
		}
		s, err := readSkill(fsys, e.Name())
		if err == nil && slices.ContainsFunc(set.skills, func(o Skill) bool { return o.Name == s.Name }) {
			err = fmt.Errorf("another skill is named %q", s.Name)
		}
		if err != nil {
			errs = append(errs, &SkillError{Path: file, Err: err})
			continue
		}
		set.skills = append(set.skills, s)
	}
	slices.SortFunc(set.skills, func(a, b Skill) int { return strings.Compare(a.Name, b.Name) })
	return set, errors.Join(errs...)
}

// frontMatter is what robby reads of a SKILL.md's front matter. Other
// fields (license, allowed-tools, metadata) are left alone.
type frontMatter struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
}

// readSkill reads the SKILL.md of the skill in dir.
func readSkill(fsys fs.FS, dir string) (Skill, error) {
	b, err := readFile(fsys, dir, "SKILL.md")
	if err != nil {
		return Skill{}, err
	}
	b = bytes.TrimPrefix(b, []byte("\uFEFF"))
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	rest, ok := bytes.CutPrefix(b, []byte("---\n"))
	if !ok {
		return Skill{}, errors.New("no front matter: it must begin with a line ---")
	}
	head, body, ok := bytes.Cut(rest, []byte("\n---\n"))
	if !ok {
		head, ok = bytes.CutSuffix(rest, []byte("\n---"))
	}
	if !ok {
		return Skill{}, errors.New("the front matter has no closing line ---")
	}
	var fm frontMatter
	if err := yaml.Unmarshal(head, &fm); err != nil {
		return Skill{}, fmt.Errorf("front matter: %w", err)
	}
	fm.Name, fm.Description = strings.TrimSpace(fm.Name), strings.TrimSpace(fm.Description)
	switch {
	case fm.Name == "" || fm.Description == "":
		return Skill{}, errors.New("the front matter needs a name and a description")
	case len(fm.Name) > maxName || strings.ContainsAny(fm.Name, "\n\r"):
		return Skill{}, fmt.Errorf("name %q: at most %d bytes on one line", fm.Name, maxName)
	case len(fm.Description) > maxDescription:
		return Skill{}, fmt.Errorf("the description has %d bytes, more than %d", len(fm.Description), maxDescription)
	case !utf8.Valid(body):
		return Skill{}, errors.New("the instructions are not UTF-8 text")
	}
	return Skill{Name: fm.Name, Description: fm.Description, Dir: dir, instructions: strings.TrimSpace(string(body))}, nil
}

// Skills returns the skills, sorted by name.
func (s *Set) Skills() []Skill { return slices.Clone(s.skills) }

// Prompt returns the part of a system prompt that lists the skills: each
// one's name and description, and how to load it. It is empty for no
// skills.
func (s *Set) Prompt() string {
	if len(s.skills) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("You have skills: instructions for tasks of a kind, with files. When a task matches a skill's " +
		"description, call load_skill with its name first and follow what it says; read its files with read_skill_file.\n\nSkills:\n")
	for _, sk := range s.skills {
		fmt.Fprintf(&b, "- %s: %s\n", sk.Name, strings.Join(strings.Fields(sk.Description), " "))
	}
	return b.String()
}

// skill returns the skill of that name.
func (s *Set) skill(name string) (*Skill, error) {
	i := slices.IndexFunc(s.skills, func(sk Skill) bool { return sk.Name == name })
	if i < 0 {
		names := make([]string, len(s.skills))
		for j, sk := range s.skills {
			names[j] = sk.Name
		}
		return nil, fmt.Errorf("no skill %q; the skills are: %s", name, strings.Join(names, ", "))
	}
	return &s.skills[i], nil
}
