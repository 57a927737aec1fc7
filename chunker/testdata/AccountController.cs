using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading.Tasks;

namespace Bank.Api.Controllers
{
    /// <summary>
    /// Exposes account operations over HTTP.
    /// </summary>
    public class AccountController
    {
        private readonly IAccountStore _store;
        private readonly ILogger _log;

        public AccountController(IAccountStore store, ILogger log)
        {
            _store = store ?? throw new ArgumentNullException(nameof(store));
            _log = log;
        }

        /// <summary>Returns the balance of an account.</summary>
        public async Task<decimal> GetBalance(Guid accountId)
        {
            var account = await _store.FindAsync(accountId);
            if (account == null)
            {
                throw new KeyNotFoundException($"account {accountId}");
            }
            return account.Balance;
        }

        /// <summary>
        /// Moves money between two accounts of the same customer.
        /// </summary>
        public async Task Transfer(Guid from, Guid to, decimal amount)
        {
            if (amount <= 0)
            {
                throw new ArgumentOutOfRangeException(nameof(amount));
            }
            var source = await _store.FindAsync(from);
            var target = await _store.FindAsync(to);
            if (source.Balance < amount)
            {
                _log.Warn($"insufficient funds in {from}");
                throw new InvalidOperationException("insufficient funds");
            }
            source.Balance -= amount;
            target.Balance += amount;
            await _store.SaveAsync(new[] { source, target });
        }

        public IEnumerable<Guid> Overdrawn(IEnumerable<Account> accounts) =>
            accounts.Where(a => a.Balance < 0).Select(a => a.Id);

        public int Count { get; private set; }
    }

    public interface IAccountStore
    {
        Task<Account> FindAsync(Guid id);
        Task SaveAsync(IEnumerable<Account> accounts);
    }

    public record Account(Guid Id, string Owner)
    {
        public decimal Balance { get; set; }
    }
}
