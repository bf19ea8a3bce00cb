#!/usr/bin/env perl

# Local mode with a model's own chat template: stories260K copied with a
# template of its own in tokenizer.chat_template (t/unit/jinja/
# gguf_with_template.c).  A chat is rendered by that template (its trim
# and its bos_token: the prompt is the completion's five tokens, and the
# greedy story follows); a conversation the template refuses with
# raise_exception is a 400 naming the template's message, before the
# engine is asked; a template that does not parse is said at load, at
# warn level, and the built-in format is used; so is one that fails when
# rendering (a filter the renderer lacks), said once a worker.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use File::Temp ();
use JSON::PP ();
use Test::More;

use Fairgate::Test qw(:DEFAULT gateway);
use Fairgate::Engine qw(wait_attached);

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;

my $tool = "$Fairgate::Test::BUILD/t/gguf_with_template";
plan skip_all => "$tool is missing: run make" unless -x $tool;

my $J = JSON::PP->new->canonical;

my $dir = File::Temp::tempdir('fairgate-tpl-XXXXXX', TMPDIR => 1,
                              CLEANUP => !$ENV{FAIRGATE_KEEP});
chmod 0755, $dir;

# a model with TEMPLATE as its chat template, in $dir/NAME.gguf
sub model_with {
    my ($name, $template) = @_;
    open my $fh, '>', "$dir/$name.jinja" or die "$dir/$name.jinja: $!\n";
    print {$fh} $template;
    close $fh;

    my ($rc, $out) = Fairgate::Test::run_cmd($tool, $Fairgate::Engine::MODEL,
                                             "$dir/$name.gguf",
                                             "$dir/$name.jinja");
    die "gguf_with_template: $out" if $rc;
    chmod 0644, "$dir/$name.gguf";

    return "$dir/$name.gguf";
}

sub post {
    my ($s, $body) = @_;
    return $s->post('/v1/chat/completions', $J->encode($body),
                    headers => ['Content-Type: application/json']);
}

my $good = model_with('good', <<'END');
{%- for m in messages %}
    {%- if loop.index0 > 0 and m.role == messages[loop.index0 - 1].role %}
        {{- raise_exception('Roles must alternate: message ' ~ loop.index0 ~ ' is a ' ~ m.role ~ ' again') }}
    {%- endif %}
{%- endfor %}
{{- bos_token }}{{ messages[-1].content | trim }}
END

my $bad = model_with('bad', "{% if %}never{% endif %}\n");

# parses, fails when rendering: a filter the renderer lacks
my $failing = model_with('failing',
                         "{{ messages | last | nosuchfilter }}\n");


subtest 'a template that does not parse: said at load, the built-in used'
    => sub {
    my $s = gateway(engines => [['bad', { shm => "/fg-t-tpl-$$",
                                          model => $bad }]]);

    like($s->error_log,
         qr/\[warn\].*fairgate_engine "bad": the chat template of "\S+bad\.gguf" does not parse \(line 1, column \d+: [^)]+\), the built-in fallback format is used/,
         'one warning names the file, the place and the format used');

    is($s->stop, 0, 'nginx exits cleanly');
};


subtest 'the model\'s own template renders the prompt' => sub {
    my $e = Fairgate::Engine->new(backend => 'cpu', model => $good);
    $e->start;

    my $s = gateway(engines => [['good', $e, 'dead_after=1s']]);
    ok(wait_attached($s), 'the worker attached to the engine');

    my $r = post($s, { model => 'good', max_tokens => 12,
                       temperature => 0,
                       messages => [{ role => 'system', content => 'x' },
                                    { role => 'user',
                                      content => "  Once upon a time \n" }] });
    is($r->{status}, 200, "a chat: 200") or diag(explain($r));

    my $j = eval { $J->decode($r->{body}) } // {};
    is($j->{usage}{prompt_tokens}, 5,
       'the prompt is the template\'s: BOS and the trimmed last message, '
       . 'the 5 tokens of "Once upon a time"');
    like($j->{choices}[0]{message}{content} // '',
         qr/^, there was a little girl named Lily/,
         'and the model goes on with the story');

    $r = post($s, { model => 'good', max_tokens => 4,
                    messages => [{ role => 'user', content => 'a' },
                                 { role => 'user', content => 'b' }] });
    is($r->{status}, 400, 'a conversation the template refuses: 400');

    my $err = (eval { $J->decode($r->{body}) } // {})->{error} // {};
    is($err->{message}, 'Invalid \'messages\': this model\'s chat template '
       . 'refused the conversation: Roles must alternate: message 1 is a '
       . 'user again', 'the template\'s own message');
    is($err->{param}, 'messages', 'param messages');
    is($err->{code}, 'invalid_value', 'code invalid_value');

    is($s->stop, 0, 'nginx exits cleanly');
    unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/,
           'no alert, crit or emerg in the log');
    $e->stop;
};


subtest 'a template that fails when rendering: the built-in format, said '
        . 'once' => sub {
    my $e = Fairgate::Engine->new(backend => 'cpu', model => $failing);
    $e->start;

    my $s = gateway(engines => [['failing', $e, 'dead_after=1s']],
                    workers => 1);
    ok(wait_attached($s), 'the worker attached to the engine');

    for my $i (1, 2) {
        my $r = post($s, { model => 'failing', max_tokens => 12,
                           temperature => 0,
                           messages => [{ role => 'user',
                                          content => 'Once upon a time' }] });
        is($r->{status}, 200, "chat $i: 200") or diag($r->{body});

        my $j = eval { $J->decode($r->{body}) } // {};
        is($j->{usage}{prompt_tokens}, 5,
           "chat $i: the fallback's prompt, the message's 5 tokens");
    }

    my @warned = $s->error_log
                 =~ /\[warn\].*fairgate_engine "failing": the chat template failed at line 1, column \d+: [^;]*nosuchfilter[^;]*; the built-in fallback format is used for such requests/g;
    is(scalar @warned, 1, 'one warning, with the template\'s line');

    is($s->stop, 0, 'nginx exits cleanly');
    $e->stop;
};

done_testing();
