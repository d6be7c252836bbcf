package main

import (
	"github.com/spf13/cobra"

	"cnbench/internal/awake"
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

func newAwakeCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "awake CPUS",
		Short:  "Keep the listed CPUs from idling until stdin ends (internal)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return awake.Serve(args[0], cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
}
