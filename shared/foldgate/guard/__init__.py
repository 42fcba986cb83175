"""Guardrails: the learned poisoning scorer shared by the index-time scan and the result guard, and the
guard applied to tool results, resource reads and prompts before they reach the agent. Importing the
package is cheap: the model file loads on first use."""
