// Package otelfsm traces and measures the fsmgen engine with OpenTelemetry.
package otelfsm
