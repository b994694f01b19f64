package skills_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/robbytest/agenttest"
	"github.com/robby-go/robby/skills"
)

// folder writes a skills folder beside a secret file it must not reach:
// two good skills, two malformed, links out and in.
func folder(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(base, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	}
	link := func(target, name string) {
		require.NoError(t, os.Symlink(target, filepath.Join(base, filepath.FromSlash(name))))
	}
	write("secret.txt", "the secret")
	write("skills/pdf/SKILL.md", "---\nname: pdf\ndescription: >-\n  Fill PDF forms\n  and extract their text.\nlicense: MIT\nallowed-tools: Bash\n---\n# PDF\n\nRun scripts/fill.py on the form.\n")
	write("skills/pdf/reference.md", "The reference.")
	write("skills/pdf/scripts/fill.py", "print('filled')\n")
	write("skills/pdf/big.bin", strings.Repeat("x", skills.MaxFileSize+1))
	link("reference.md", "skills/pdf/alias.md")                        // in the skill: fine
	link("../../secret.txt", "skills/pdf/secret.txt")                  // out of the skills
	link("../csv/SKILL.md", "skills/pdf/sibling.md")                   // into another skill
	link(filepath.Join(base, "secret.txt"), "skills/pdf/absolute.txt") // absolute
	link("scripts/../../../secret.txt", "skills/pdf/sneaky.txt")
	write("skills/csv/SKILL.md", "\uFEFF---\r\nname: csv\r\ndescription: Clean CSV files.\r\n---\r\nUse commas.\r\n")
	write("skills/broken/SKILL.md", "# No front matter\n")
	write("skills/nameless/SKILL.md", "---\ndescription: no name\n---\nbody\n")
	write("skills/badyaml/SKILL.md", "---\nname: [unclosed\n---\nbody\n")
	write("skills/twin/SKILL.md", "---\nname: pdf\ndescription: a second pdf\n---\n")
	write("skills/notes/readme.txt", "not a skill")
	return filepath.Join(base, "skills")
}

// load loads dir through an os.Root, as robby -skills does.
func load(t *testing.T, dir string) (*skills.Set, error) {
	t.Helper()
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	t.Cleanup(func() { root.Close() })
	return skills.Load(root.FS())
}

func TestLoadSkipsMalformedSkills(t *testing.T) {
	set, err := load(t, folder(t))
	require.NotNil(t, set)
	var names []string
	for _, s := range set.Skills() {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"csv", "pdf"}, names)
	assert.Equal(t, "Fill PDF forms and extract their text.", set.Skills()[1].Description)
	require.Error(t, err)
	for _, want := range []string{"skills: broken/SKILL.md: no front matter", "skills: nameless/SKILL.md: the front matter needs a name",
		"skills: badyaml/SKILL.md: front matter:", `skills: twin/SKILL.md: another skill is named "pdf"`} {
		assert.Contains(t, err.Error(), want)
	}
	var se *skills.SkillError
	assert.ErrorAs(t, err, &se)
	prompt := set.Prompt()
	assert.Contains(t, prompt, "- csv: Clean CSV files.\n- pdf: Fill PDF forms and extract their text.\n")
	assert.NotContains(t, prompt, "Use commas", "instructions are loaded, not listed")
}

// call runs one of the set's tools as the model would.
func call(t *testing.T, set *skills.Set, name, args string) robby.ToolResult {
	t.Helper()
	srv := agenttest.NewServer(t)
	a := agenttest.New(t, srv, robby.WithTools(set.Tools()...))
	out, err := a.ExecuteToolCalls(t.Context(), []robby.ToolCall{{ID: "c", Name: name, Arguments: args}})
	require.NoError(t, err)
	return out[0]
}

func TestReadSkillFileStaysInTheSkill(t *testing.T) {
	dir := folder(t)
	rooted, _ := load(t, dir)
	plain, _ := skills.Load(os.DirFS(dir)) // no os.Root: robby's own checks alone
	for name, set := range map[string]*skills.Set{"os.Root": rooted, "os.DirFS": plain} {
		t.Run(name, func(t *testing.T) {
			r := call(t, set, "load_skill", `{"name":"pdf"}`)
			require.NoError(t, r.Err)
			assert.Contains(t, r.Output, "Skill pdf\n\n# PDF\n\nRun scripts/fill.py on the form.")
			assert.Contains(t, r.Output, "- scripts/fill.py\n")
			assert.Contains(t, r.Output, "robby does not run scripts")

			for path, want := range map[string]string{"reference.md": "The reference.", "alias.md": "The reference.",
				"scripts/fill.py": "print('filled')\n", "./scripts/../reference.md": "The reference."} {
				r := call(t, set, "read_skill_file", `{"name":"pdf","path":"`+path+`"}`)
				require.NoError(t, r.Err, path)
				assert.Equal(t, want, r.Output, path)
			}
			for _, path := range []string{"../csv/SKILL.md", "../../secret.txt", "/etc/passwd", "secret.txt", "sibling.md",
				"absolute.txt", "sneaky.txt", `..\\csv\\SKILL.md`, "scripts/../../csv/SKILL.md"} {
				r := call(t, set, "read_skill_file", `{"name":"pdf","path":"`+path+`"}`)
				assert.ErrorIs(t, r.Err, skills.ErrOutside, path)
				assert.NotContains(t, r.Output, "the secret", path)
				assert.NotContains(t, r.Output, "Clean CSV", path)
			}
			r = call(t, set, "read_skill_file", `{"name":"pdf","path":"big.bin"}`)
			assert.ErrorContains(t, r.Err, "larger than 262144 bytes")
			r = call(t, set, "read_skill_file", `{"name":"pdf","path":"scripts"}`)
			assert.ErrorContains(t, r.Err, "not a file")
			r = call(t, set, "read_skill_file", `{"name":"nope","path":"x"}`)
			assert.ErrorContains(t, r.Err, `no skill "nope"; the skills are: csv, pdf`)
		})
	}
}

func TestAContinuedConversationKeepsItsSkill(t *testing.T) {
	set, _ := load(t, folder(t))
	store := agenttest.NewStore(t)
	srv := agenttest.NewServer(t,
		robbytest.ToolCalls(robbytest.Call("load_skill", `{"name":"csv"}`)),
		robbytest.Text("Loaded."),
	)
	system := robby.WithSystem("You help.\n\n" + set.Prompt())
	a := agenttest.New(t, srv, system, robby.WithTools(set.Tools()...))
	_, err := a.Run(t.Context(), "clean my csv", robby.WithConversation(store, "u", "c"))
	require.NoError(t, err)
	first := srv.Requests()[0]
	assert.Contains(t, first.Messages[0].Content, "- csv: Clean CSV files.")
	assert.NotContains(t, first.Messages[0].Content, "Use commas.")

	// Another agent, as after a restart, continues the stored conversation:
	// the skill's instructions are in it.
	srv2 := agenttest.NewServer(t, robbytest.Text("Done."))
	b := agenttest.New(t, srv2, system, robby.WithTools(set.Tools()...))
	_, err = b.Run(t.Context(), "and now?", robby.WithConversation(store, "u", "c"))
	require.NoError(t, err)
	var loaded bool
	for _, m := range srv2.Requests()[0].Messages {
		loaded = loaded || m.Role == "tool" && strings.Contains(m.Content, "Use commas.")
	}
	assert.True(t, loaded, "the loaded skill is in the continued conversation")
}

func TestNoSkills(t *testing.T) {
	set, err := skills.Load(os.DirFS(t.TempDir()))
	require.NoError(t, err)
	assert.Empty(t, set.Prompt())
	assert.Empty(t, set.Tools())
	_, err = skills.Load(os.DirFS(filepath.Join(t.TempDir(), "missing")))
	assert.ErrorIs(t, err, fs.ErrNotExist)
}
