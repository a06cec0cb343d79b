"""Long polls and payment streams held by one API process: the section and its clients."""
