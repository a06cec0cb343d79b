"""The sandbox's simulation terminals: the protocol client that plays magic amounts, and the
API process's runner of them."""
