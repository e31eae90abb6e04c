"""One module per subcommand: parse the command line, call a plain function, return an int."""
