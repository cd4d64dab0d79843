"""PyTorch's own wheels as a source of builds: the facts of each release (data/wheel-facts.json, each with its
confidence and sources), the wheel catalog derived from them by `pickvariant catalog wheels` (data/wheels.json), and
its records. Read only when this source is asked for: `detect` of the Flox source never loads it."""
