package a2atool_test

import (
	"context"
	"log"
	"os"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/a2atool"
)

// A remote agent, served over A2A, answers the questions of prices.
func ExampleNew() {
	ctx := context.Background()
	pricing, err := a2atool.New(ctx, "https://pricing.example/",
		a2atool.WithHeader("Authorization", "Bearer "+os.Getenv("PRICING_TOKEN")), a2atool.WithName("pricing"))
	if err != nil {
		log.Fatal(err)
	}
	agent, err := robby.New(robby.WithTools(pricing))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	res, err := agent.Run(ctx, "How much is a bike?")
	if err != nil {
		log.Fatal(err)
	}
	log.Println(res.Text)
}
