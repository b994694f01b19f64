package robbytest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// ServeAs makes the server answer as provider's server does the requests by
// which a client tells servers apart. A test can so check what an agent does
// with each:
//
//   - [LlamaCpp]: GET /props, with the context window in
//     default_generation_settings.n_ctx;
//   - [Ollama]: GET /api/version, and POST /api/show with the model's
//     parameters and model_info;
//   - [VLLM]: GET /version;
//   - [OpenAI] and [Gemini], as by default: 404 to each of them.
//
// The context window is the one [Server.ContextLimit] set, else 4096. The
// answers come at the server's root, where those servers give them. It panics
// for a provider it does not know.
func (s *Server) ServeAs(provider string) {
	switch provider {
	case OpenAI, Gemini, LlamaCpp, Ollama, VLLM:
	default:
		panic(fmt.Sprintf("robbytest: ServeAs: no server known for %q", provider))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.software = provider
}

// serveProbe answers a request asking the server what it is, and reports
// whether r was one.
func (s *Server) serveProbe(w http.ResponseWriter, r *http.Request) bool {
	probe := ""
	for _, p := range [...]string{"/props", "/api/version", "/api/show", "/version"} {
		if strings.HasSuffix(r.URL.Path, p) {
			probe = p
			break
		}
	}
	if probe == "" {
		return false
	}
	s.mu.Lock()
	software, limit := s.software, s.limit
	s.mu.Unlock()
	window := limit
	if window == 0 {
		window = 4096
	}
	// The bodies as the servers send them, cut to the fields that tell
	// them apart and the window.
	var body any
	switch {
	case software == LlamaCpp && probe == "/props" && r.Method == http.MethodGet:
		body = map[string]any{
			"default_generation_settings": map[string]any{"id": 0, "n_ctx": window, "speculative": false, "is_processing": false,
				"params": map[string]any{"n_predict": -1, "temperature": 0.8, "top_k": 40, "top_p": 0.95, "min_p": 0.05}},
			"total_slots": 1, "model_path": "models/robbytest-Q4_K_M.gguf", "chat_template": "{{ messages }}",
			"modalities": map[string]any{"vision": false, "audio": false}, "build_info": "b6000-robbytest",
		}
	case software == Ollama && probe == "/api/version" && r.Method == http.MethodGet:
		body = map[string]any{"version": "0.12.6"}
	case software == Ollama && probe == "/api/show" && r.Method == http.MethodPost:
		// Without a num_ctx parameter, Ollama runs the model with 4096.
		parameters := `stop                           "<|im_end|>"`
		if limit > 0 {
			parameters = fmt.Sprintf("num_ctx                        %d\n%s", limit, parameters)
		}
		body = map[string]any{
			"parameters":   parameters,
			"model_info":   map[string]any{"general.architecture": "qwen2", "qwen2.context_length": 32768},
			"capabilities": []string{"completion", "tools"},
		}
	case software == VLLM && probe == "/version" && r.Method == http.MethodGet:
		body = map[string]any{"version": "0.11.0"}
	default:
		writeError(w, http.StatusNotFound, "robbytest: no such endpoint")
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(body)
	return true
}
