"""The front end: text to a resolved syntax tree. Lexing and the post-lexer (lexing.py,
nesting.py), the LALR parse over lark's tables (parser.py, lalr_driver.py), the typed tree
(transformer.py, ast.py), f-string splitting, syntax-error messages, and name resolution
(resolver.py). It imports only the base layer."""
