"""Reading host transcripts and the context audit."""
