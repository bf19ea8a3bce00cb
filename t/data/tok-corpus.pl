#!/usr/bin/env perl

# The corpus of t/115-tokenizer-real.t, written to stdout as JSON strings,
# one a line: English, code, CJK, emoji, numbers, white-space runs, text
# that looks like special tokens, mixed scripts and decomposed accents,
# and random strings drawn from the characters where tokenizers differ.
# Deterministic: its own generator (xorshift64*), so every machine and
# every perl writes the same lines.  Characters are from Unicode 14 or
# before, the version of the engine's character classes.
#
# usage: perl t/data/tok-corpus.pl [LINES_OF_RANDOM_TEXT]

use strict;
use warnings;

use utf8;
no warnings "portable";

use JSON::PP ();

binmode STDOUT;

my $n_random = $ARGV[0] // 2500;
my $state = 0x9e3779b97f4a7c15;

# xorshift64*, in 64-bit integers
sub rnd {
    use integer;
    $state ^= ($state >> 12) & 0x000fffffffffffff;
    $state ^= $state << 25;
    $state ^= ($state >> 27) & 0x0000001fffffffff;
    my $r = $state * 0x2545f4914f6cdd1d;
    no integer;
    return (($r >> 33) & 0x7fffffff) % $_[0];
}

sub pick { $_[rnd(scalar @_)] }

my $json = JSON::PP->new->ascii->allow_nonref;
my @lines;

# English
my @words = qw(the quick brown fox jumps over lazy dog It's they're we've
    I'm you'll he'd DON'T WON'T She'S THEY'RE Hello world tokenizer
    vocabulary gateway inference model prompt answer Mr. Dr. e.g. i.e.
    well-known state-of-the-art naïve café résumé coöperate fiancée
    "quoted" (parenthesised) [bracketed] {braced} semi-colon; colon:
    question? exclamation! ellipsis... dash— en–dash 'single' `back`
    UPPER lower MiXeD CamelCase snake_case kebab-case);
for my $i (1 .. 400) {
    my $n = 1 + rnd(14);
    my $s = join ' ', map { pick(@words) } 1 .. $n;
    $s = ucfirst($s) . pick('.', '!', '?', '', ',', ' .', ' ?', '...');
    push @lines, $s;
}

# code
my @code = (
    "int main(void)\n{\n    return 0;\n}\n",
    "def f(x):\n\treturn x  +  1\n\n\n",
    "for (i = 0; i < n; i++) {\n        a[i] = b[i] * 2;\n    }",
    "const x = { a: 1, 'b': [2, 3], \"c\": null };",
    "if __name__ == \"__main__\":\n    main()",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "#include <stdio.h>\n#define MAX(a, b) ((a) > (b) ? (a) : (b))",
    "    \$ ls -la | grep '\\.c\$' && echo \"done\" 2>&1",
    "<div class=\"x\"><b>bold</b> <i>it</i></div>",
    "{\"key\": \"value\", \"n\": 12.5e-3, \"ok\": true}",
    "x+=1;y-=2;z*=3;w/=4;a%=5;b<<=1;c>>=2;d&&=e||f",
    "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }",
    "\r\nline one\r\nline two\r\n",
    "\t\tindented\twith\ttabs\t\t",
    "    four\n        eight\n            twelve",
    "// comment\n/* block */\n# hash\n-- dash",
    "s = 'it''s'; t = \"don't\"; u = `it's`",
);
for my $i (1 .. 200) {
    push @lines, pick(@code) . (rnd(2) ? '' : pick(@code));
}

# CJK, other scripts, emoji
my @scripts = (
    "日本語のテキスト、中文文本。", "東京は日本の首都です。",
    "我爱北京天安门！", "한국어 문장입니다.", "カタカナとひらがな",
    "Привет, мир! Как дела?", "Γειά σου κόσμε", "مرحبا بالعالم",
    "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก", "Xin chào thế giới",
    "Ünïcödé àçcèntš", "ﬁ ﬂ ligatures", "ｆｕｌｌｗｉｄｔｈ　ＡＢＣ",
    "😀😃😄 emoji", "👍🏽👍🏿", "👨‍👩‍👧‍👦 family", "🇫🇷🇯🇵 flags",
    "❤️ ☺️ ✈️", "∑∫∂√∞≠≤≥", "€£¥₹₿ \$", "½ ¾ ⅓ ² ³",
    "٠١٢٣٤٥ ०१२३ １２３", "e\x{301} cafe\x{301} n\x{303}",
    "A\x{30a} \x{1100}\x{1161}\x{11a8}", "\x{2126} \x{212b} \x{f900}",
    "a\x{328}\x{301}", "a\x{301}\x{328}", "\x{915}\x{93c} \x{958}",
    "o\x{31b}\x{323} \x{1e9b}\x{323}", "\x{ac00}\x{11a8} \x{110b}\x{1173}",
    "\x{1e0b}\x{323}\x{307} q\x{307}\x{323}", "中文English混合text",
    "Ελληνικά and English",
);
for my $i (1 .. 300) {
    my $n = 1 + rnd(3);
    push @lines, join pick(' ', '', "\n", '  ', ', '),
                      map { pick(@scripts) } 1 .. $n;
}

# numbers
for my $i (1 .. 200) {
    my $d = 1 + rnd(12);
    my $num = join '', map { rnd(10) } 1 .. $d;
    push @lines, pick("$num", " $num", "x$num", "$num.$d", "-$num",
                      "1,234,$num", "$num%", "v$d.$d.$num", "2024-0$d-1$d",
                      "+1 (555) $num", "$num e-$d", "0x$num", "$num\n$num");
}

# white space
my @ws = (' ', '  ', "\t", "\n", "\r\n", "\n\n", "\x{a0}", "\x{3000}",
          "\x{2028}", "\r", "\x{2009}", "\x{200b}");
for my $i (1 .. 200) {
    my $s = '';
    for (1 .. 1 + rnd(6)) {
        $s .= pick(@ws) x (1 + rnd(8));
        $s .= pick('a', 'word', '1', '.', '', 'é', '中') if rnd(2);
    }
    push @lines, $s;
}

# special-token-looking text
my @spec = ('<|begin_of_text|>', '<|eot_id|>', '<|start_header_id|>',
    '<|end_header_id|>', '<|im_start|>', '<|im_end|>', '<|endoftext|>',
    '<start_of_turn>', '<end_of_turn>', '<bos>', '<eos>', '<pad>', '<s>',
    '</s>', '<unk>', '<mask>', '<unused7>', '[INST]', '[/INST]',
    '<<SYS>>', '<think>', '</think>', '<tool_call>', '<0x41>', '<table>',
    "\x{2581}", "\x{2581}\x{2581}", "\x{120}", '<|im_start', 'im_end|>',
    '<|reserved_special_token_5|>', '<|fim_prefix|>', '<image_soft_token>',
    '<|', '|>', '<', '>');
for my $i (1 .. 300) {
    my $s = '';
    for (1 .. 1 + rnd(5)) {
        $s .= pick(@spec);
        $s .= pick('', ' ', "\n", 'system', 'user', ' Hello', 'x', "\n\n")
            if rnd(3);
    }
    push @lines, $s;
}

# random strings of the characters where tokenizers disagree
my @chars = (' ', ' ', ' ', "\n", "\t", "\r", 'a', 'b', 'Z', 'e', 's',
    't', "'", "'", '1', '2', '0', '.', ',', '-', '_', '!', '?', '(',
    '"', 'é', "\x{301}", '中', '文', 'の', '😀', "\x{1f3fd}", "\x{200d}",
    "\x{a0}", "\x{3000}", '٣', '１', 'Ж', 'ß', 'İ', "\x{2581}", '<', '>',
    '|', '$', '%', '&', '#', '@', '\\', '/', '=', '+', '*', '~', '^');
for my $i (1 .. $n_random) {
    my $len = 1 + rnd(40);
    push @lines, join '', map { pick(@chars) } 1 .. $len;
}

print $json->encode($_), "\n" for @lines;
