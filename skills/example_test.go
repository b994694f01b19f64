package skills_test

import (
	"fmt"
	"testing/fstest"

	"github.com/robby-go/robby/skills"
)

// The system prompt lists each skill's name and description; the model
// loads a skill's instructions with load_skill when a task needs them.
func ExampleLoad() {
	fsys := fstest.MapFS{
		"csv/SKILL.md":        {Data: []byte("---\nname: csv\ndescription: Clean CSV files.\n---\nUse commas.\n")},
		"pdf/SKILL.md":        {Data: []byte("---\nname: pdf\ndescription: Fill PDF forms.\n---\nRun scripts/fill.py.\n")},
		"pdf/scripts/fill.py": {Data: []byte("print('filled')\n")},
		"broken/SKILL.md":     {Data: []byte("no front matter\n")},
	}
	set, err := skills.Load(fsys)
	fmt.Println(err)
	fmt.Print(set.Prompt())
	for _, t := range set.Tools() {
		fmt.Println(t.Name())
	}
	// Output:
	// skills: broken/SKILL.md: no front matter: it must begin with a line ---
	// You have skills: instructions for tasks of a kind, with files. When a task matches a skill's description, call load_skill with its name first and follow what it says; read its files with read_skill_file.
	//
	// Skills:
	// - csv: Clean CSV files.
	// - pdf: Fill PDF forms.
	// load_skill
	// read_skill_file
}
