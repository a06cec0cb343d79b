"""Reading request input (JSON bodies and forms) into checked values, or Problems naming
the field."""
