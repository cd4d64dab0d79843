"""The Flox source's steps: a variant (and its set) installed from an organisation with `flox install`, or built
from its recipe with `flox build`, into one Flox environment, whole or put back; `verify --org`'s throwaway
environment; and the contract with the Flox CLI these steps are written against (`floxcontract`)."""
