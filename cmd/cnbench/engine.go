package main

import (
	"github.com/spf13/cobra"

	"cnbench/internal/engine"
)

func newEngineCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "engine",
		Short:  "Run the traffic engine, controlled over stdin/stdout (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return engine.Serve(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
}
