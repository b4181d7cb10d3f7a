"""Tables in a page's text layer -> rows of cells: `find` gates and runs the two detectors
(`ruled` from the page's rules, `aligned` from whitespace) over the `words` of the page; `cells`
holds the found table and writes it as page text."""
