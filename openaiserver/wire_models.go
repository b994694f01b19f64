package openaiserver

// The wire types of GET /v1/models.

// wireModel is one entry of the model list: an agent's name.
type wireModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// wireModelList is the answer to GET /v1/models.
type wireModelList struct {
	Object string      `json:"object"`
	Data   []wireModel `json:"data"`
}
