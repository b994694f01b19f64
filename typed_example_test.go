package robby_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

type invoice struct {
	Number   string  `json:"number" jsonschema:"the invoice number, as printed"`
	Customer string  `json:"customer"`
	Total    float64 `json:"total" jsonschema:"the amount due, in euros"`
	PaidOn   *string `json:"paid_on,omitempty" jsonschema:"the date it was paid, if it was"`
}

func ExampleRunTyped() {
	model := scripted(robbytest.Answer(`{"number": "F-2041", "customer": "ACME", "total": 1250.5, "paid_on": null}`))
	defer model.Close()
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("test"))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	inv, _, err := robby.RunTyped[invoice](context.Background(), agent,
		"Invoice F-2041 to ACME: 1,250.50 EUR, not paid yet.")
	var bad *robby.AnswerError
	if errors.As(err, &bad) {
		log.Fatalf("the model's answer %s: %v", bad.Raw, bad.Failures)
	} else if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s %s %.2f paid:%v\n", inv.Number, inv.Customer, inv.Total, inv.PaidOn != nil)
	// Output: F-2041 ACME 1250.50 paid:false
}

func ExampleStreamTyped() {
	model := scripted(robbytest.Answer(`{"number": "F-2041", "customer": "ACME", "total": 1250.5}`))
	defer model.Close()
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("test"))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	for e, err := range robby.StreamTyped[invoice](context.Background(), agent, "Invoice F-2041 to ACME: 1,250.50 EUR") {
		switch {
		case err != nil:
			log.Fatal(err)
		case e.Kind == robby.EventPartial:
			fmt.Printf("so far: %+v\n", e.Value)
		}
	}
	// Output:
	// so far: {Number:F-2041 Customer: Total:0 PaidOn:<nil>}
	// so far: {Number:F-2041 Customer:ACME Total:0 PaidOn:<nil>}
	// so far: {Number:F-2041 Customer:ACME Total:1250.5 PaidOn:<nil>}
}
