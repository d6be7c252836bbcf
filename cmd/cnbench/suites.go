package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"cnbench/internal/scenario"
	"cnbench/suites"
)

func newSuitesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "suites",
		Short: "List the built-in scenario suites",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, name := range suites.Names() {
				file, data, _ := suites.Lookup(name)
				spec, err := scenario.Parse(file, data, vocabulary())
				if err != nil {
					return err
				}
				desc := strings.Join(strings.Fields(spec.Description), " ")
				fmt.Fprintf(cmd.OutOrStdout(), "%-20s %4d cases  %s\n", name, len(spec.Expand()), desc)
			}
			return nil
		},
	}
}
