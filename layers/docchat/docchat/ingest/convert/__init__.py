"""PDF conversion along its seams: `pdf` reads pages (the entry point, `pages_from_pdf`);
`textlayer`, `glyphs` and `columns` turn a page's text layer into lines in reading order;
`margins` and `running` drop what is not the text (margin notes, footnote marks, running
headers); `paragraphs`, `headings` and `titles` build the markdown; `forms` reads filled-in
fields; `pageocr` reads pages without a text layer."""
