package robbytest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// TestModelsAndFallback points a plain openai-go client at the server, as
// a newcomer would: it lists the models, and keeps getting answers once
// the script is used up.
func TestModelsAndFallback(t *testing.T) {
	srv := robbytest.NewServer()
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("x"), option.WithMaxRetries(0))
	ctx := context.Background()

	page, err := client.Models.List(ctx)
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	assert.Equal(t, robbytest.Model, page.Data[0].ID)
	m, err := client.Models.Get(ctx, robbytest.Model)
	require.NoError(t, err)
	assert.Equal(t, robbytest.Model, m.ID)
	_, err = client.Models.Get(ctx, "gpt-nothing")
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusNotFound, apiErr.StatusCode)

	ask := func(prompt string) (string, error) {
		c, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: robbytest.Model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		})
		if err != nil {
			return "", err
		}
		return c.Choices[0].Message.Content, nil
	}
	srv.Reply(robbytest.Text("scripted"))
	got, err := ask("one")
	require.NoError(t, err)
	assert.Equal(t, "scripted", got)
	_, err = ask("two")
	require.Error(t, err, "without a fallback, a request past the script is an error")

	srv.Fallback(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		return robbytest.Text("You said: " + req.Messages[len(req.Messages)-1].Content)
	}))
	for _, p := range []string{"three", "four"} {
		got, err = ask(p)
		require.NoError(t, err)
		assert.Equal(t, "You said: "+p, got)
	}
	srv.Reply(robbytest.Text("scripted again"))
	got, err = ask("five")
	require.NoError(t, err)
	assert.Equal(t, "scripted again", got, "the script comes first")

	res, err := srv.Client().Get(srv.URL + "/models")
	require.NoError(t, err)
	defer res.Body.Close()
	var list struct {
		Object string `json:"object"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&list))
	assert.Equal(t, "list", list.Object)
}
