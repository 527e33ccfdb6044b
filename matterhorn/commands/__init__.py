"""One module per ``matterhorn`` subcommand (see :mod:`matterhorn.cli`)."""
