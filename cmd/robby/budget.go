package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/robby-go/robby"
)

// budgetFlags are the flags that bound what one answer spends on model
// requests, and the prices that give it a cost.
type budgetFlags struct {
	calls  int
	tokens int64
	cost   float64
	prices string // a JSON file: model → price per million tokens
}

func (f *budgetFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.calls, "budget-calls", 0, "model requests one answer may make, summaries of -compact included; past it no request is sent (unlike -max-turns, no last turn to sum up); 0 for no limit")
	fs.Int64Var(&f.tokens, "budget-tokens", 0, "tokens (prompt and completion) the model requests of one answer may use; past it no request is sent; 0 for no limit")
	fs.Float64Var(&f.cost, "budget-cost", 0, "the `amount` the model requests of one answer may cost, at the -prices given, in their currency; past it no request is sent; 0 for no limit")
	fs.StringVar(&f.prices, "prices", "", "JSON `file` of each model's price per million tokens, such as "+
		`{"gpt-4o": {"input": 2.5, "cached_input": 1.25, "output": 10}} ({} for a free model): run and chat show each answer's cost on stderr, -trace each request's`)
}

// check reports a budget the flags cannot give, in their words.
func (f *budgetFlags) check() error {
	switch {
	case f.calls < 0:
		return fmt.Errorf("-budget-calls is %d: give a number of model requests, or 0 for no limit", f.calls)
	case f.tokens < 0:
		return fmt.Errorf("-budget-tokens is %d: give a number of tokens, or 0 for no limit", f.tokens)
	case f.cost < 0 || math.IsNaN(f.cost) || math.IsInf(f.cost, 0):
		return fmt.Errorf("-budget-cost is %v: give an amount in the prices' currency, or 0 for no limit", f.cost)
	case f.cost > 0 && f.prices == "":
		return errors.New("-budget-cost needs the models' prices: give -prices FILE")
	}
	return nil
}

// options returns the agent options of the flags, for an agent of model.
func (f *budgetFlags) options(model string) ([]robby.Option, error) {
	var opts []robby.Option
	if f.prices != "" {
		prices, err := readPrices(f.prices)
		if err != nil {
			return nil, err
		}
		if _, ok := prices[model]; !ok {
			return nil, fmt.Errorf("-prices %s: no price for the model %q: add it (%q: {} if it is free)", f.prices, model, model)
		}
		opts = append(opts, robby.WithPrices(prices))
	}
	if b := (robby.Budget{ModelCalls: f.calls, Tokens: f.tokens, Cost: f.cost}); b != (robby.Budget{}) {
		opts = append(opts, robby.WithBudget(b))
	}
	return opts, nil
}

// filePrice is a model's price per million tokens, as a -prices file gives it.
// It has "input" and "output" both, or neither for a free model.
type filePrice struct {
	Input       *float64 `json:"input"`
	CachedInput float64  `json:"cached_input"`
	Output      *float64 `json:"output"`
}

// readPrices reads a -prices file: a JSON object of each model's price.
func readPrices(path string) (map[string]robby.Price, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-prices: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // "inputs" or "cache" would silently price at 0
	var file map[string]filePrice
	err = dec.Decode(&file)
	if _, end := dec.Token(); err == nil && end != io.EOF {
		err = errors.New("more after the object")
	}
	if err != nil {
		return nil, fmt.Errorf(`-prices %s: %v: give a JSON object such as {"gpt-4o": {"input": 2.5, "cached_input": 1.25, "output": 10}}, prices per million tokens`, path, err)
	}
	prices := make(map[string]robby.Price, len(file))
	for model, p := range file {
		if model == "" {
			return nil, fmt.Errorf("-prices %s: a price for an empty model name", path)
		}
		if (p.Input == nil) != (p.Output == nil) || (p.Input == nil && p.CachedInput != 0) {
			return nil, fmt.Errorf(`-prices %s: model %q: give both "input" and "output" (per million tokens), or {} if it is free`, path, model)
		}
		var price robby.Price
		if p.Input != nil {
			price = robby.Price{Input: *p.Input, CachedInput: p.CachedInput, Output: *p.Output}
		}
		if price.Input < 0 || price.CachedInput < 0 || price.Output < 0 {
			return nil, fmt.Errorf("-prices %s: model %q: a negative price", path, model)
		}
		prices[model] = price
	}
	return prices, nil
}
