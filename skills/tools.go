package skills

import (
	"context"
	"fmt"
	"strings"

	"github.com/robby-go/robby"
)

// loadIn is load_skill's argument.
type loadIn struct {
	Name string `json:"name" jsonschema:"the skill's name, as the system prompt lists it"`
}

// readIn is read_skill_file's arguments.
type readIn struct {
	Name string `json:"name" jsonschema:"the skill's name"`
	Path string `json:"path" jsonschema:"the file's path in the skill's folder, such as reference.md or scripts/fill.py"`
}

// Tools returns the tools that read the skills: load_skill(name), which
// returns a skill's instructions and lists its files, and
// read_skill_file(name, path), which returns one of its files. Both only
// read, and are [robby.Tool.Idempotent]. With no skills there are none.
func (s *Set) Tools() []robby.Tool {
	if len(s.skills) == 0 {
		return nil
	}
	load := robby.NewTool("load_skill", "Loads a skill: its instructions, and the list of its files.",
		func(_ context.Context, in loadIn) (string, error) { return s.load(in.Name) })
	read := robby.NewTool("read_skill_file", "Reads a file of a skill, by its path in the skill's folder.",
		func(_ context.Context, in readIn) (string, error) { return s.read(in.Name, in.Path) })
	return []robby.Tool{load.Idempotent(), read.Idempotent()}
}

// load returns the instructions of the skill name, with its files.
func (s *Set) load(name string) (string, error) {
	sk, err := s.skill(name)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Skill %s\n\n%s\n", sk.Name, sk.instructions)
	list, more := files(s.fsys, sk.Dir)
	if len(list) > 0 {
		b.WriteString("\nFiles of this skill, which read_skill_file reads (robby does not run scripts):\n")
		for _, f := range list {
			b.WriteString("- " + f + "\n")
		}
		if more {
			fmt.Fprintf(&b, "- … (the first %d are listed)\n", maxListed)
		}
	}
	return b.String(), nil
}

// read returns the file p of the skill name, as text.
func (s *Set) read(name, p string) (string, error) {
	sk, err := s.skill(name)
	if err != nil {
		return "", err
	}
	b, err := readFile(s.fsys, sk.Dir, p)
	if err != nil {
		return "", err
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), nil
}
