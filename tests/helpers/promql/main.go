// promql-check parses each argument as a PromQL expression with Prometheus' own parser
// and prints why each one that does not parse fails; it exits 1 if any failed. The chart's
// tests run it on the PrometheusRule's expressions.
package main

import (
	"fmt"
	"os"

	"github.com/prometheus/prometheus/promql/parser"
)

func main() {
	p := parser.NewParser(parser.Options{})
	failed := 0
	for i, expr := range os.Args[1:] {
		if _, err := p.ParseExpr(expr); err != nil {
			fmt.Printf("expression %d: %v\n", i, err)
			failed++
		}
	}
	if failed > 0 {
		os.Exit(1)
	}
}
