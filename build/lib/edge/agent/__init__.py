"""The turn: context, the model, tool calls, the answer."""
