<?php
// Symfony Messenger 5.4 (Debian) with its Doctrine transport, driven by its own Worker and
// listeners (retry strategy, failure transport), for tests/live/test_queue_symfony.py.
// php messenger.php <dsn-json> send <class> <n> | consume <n> | hang
require '/usr/share/php/Symfony/Component/Messenger/autoload.php';
require '/usr/share/php/Symfony/Component/Messenger/Bridge/Doctrine/autoload.php';
require '/usr/share/php/Symfony/Component/EventDispatcher/autoload.php';
require '/usr/share/php/Doctrine/DBAL/autoload.php';

use Doctrine\DBAL\DriverManager;
use Psr\Container\ContainerInterface;
use Symfony\Component\EventDispatcher\EventDispatcher;
use Symfony\Component\Messenger\Bridge\Doctrine\Transport\Connection;
use Symfony\Component\Messenger\Bridge\Doctrine\Transport\DoctrineTransport;
use Symfony\Component\Messenger\Envelope;
use Symfony\Component\Messenger\EventListener\SendFailedMessageForRetryListener;
use Symfony\Component\Messenger\EventListener\SendFailedMessageToFailureTransportListener;
use Symfony\Component\Messenger\EventListener\StopWorkerOnMessageLimitListener;
use Symfony\Component\Messenger\EventListener\StopWorkerOnTimeLimitListener;
use Symfony\Component\Messenger\EventListener\AddErrorDetailsStampListener;
use Symfony\Component\Messenger\Handler\HandlersLocator;
use Symfony\Component\Messenger\MessageBus;
use Symfony\Component\Messenger\Middleware\HandleMessageMiddleware;
use Symfony\Component\Messenger\Retry\MultiplierRetryStrategy;
use Symfony\Component\Messenger\Transport\Serialization\PhpSerializer;
use Symfony\Component\Messenger\Worker;

final class Hello { public function __construct(public int $i) {} }
final class Boom { public function __construct(public int $i) {} }
final class Slow { public function __construct(public int $i) {} }

final class Locator implements ContainerInterface {
    public function __construct(private array $items) {}
    public function get(string $id): mixed { return $this->items[$id]; }
    public function has(string $id): bool { return isset($this->items[$id]); }
}

[$_, $params, $cmd] = $argv;
$dbal = DriverManager::getConnection(json_decode($params, true));
function transport($dbal, string $queue): DoctrineTransport {
    $conn = new Connection(['table_name' => 'messenger_messages', 'queue_name' => $queue,
        'redeliver_timeout' => 3600, 'auto_setup' => true], $dbal);
    return new DoctrineTransport($conn, new PhpSerializer());
}
$async = transport($dbal, 'default');
$failed = transport($dbal, 'failed');

if ($cmd === 'send') {
    $class = $argv[3];
    for ($i = 0; $i < (int) $argv[4]; $i++) { $async->send(new Envelope(new $class($i))); }
    exit(0);
}
$bus = new MessageBus([new HandleMessageMiddleware(new HandlersLocator([
    Hello::class => [fn (Hello $m) => null],
    Boom::class => [function (Boom $m) { throw new \RuntimeException('boom'); }],
    Slow::class => [function (Slow $m) { sleep(600); }],
]))]);
$events = new EventDispatcher();
$events->addSubscriber(new AddErrorDetailsStampListener());
$events->addSubscriber(new SendFailedMessageForRetryListener(
    new Locator(['async' => $async]),
    new Locator(['async' => new MultiplierRetryStrategy(1, 0)])));  // one retry, no delay
$events->addSubscriber(new SendFailedMessageToFailureTransportListener(
    new Locator(['async' => $failed])));
$events->addSubscriber(new StopWorkerOnTimeLimitListener(120));
if ($cmd === 'consume') {
    $events->addSubscriber(new StopWorkerOnMessageLimitListener((int) $argv[3]));
}
if ($cmd === 'hang') { fwrite(STDOUT, "working\n"); }
(new Worker(['async' => $async], $bus, $events))->run(['sleep' => 100000]);
